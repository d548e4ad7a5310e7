// zkfleet-example: a small Go client of the broker's gRPC front door
// (zkfleet.v1, schema/grpc/zkfleet_v1.proto; docs/clients.md, "gRPC").
//
//	zkfleet-example --addr HOST:PORT --ca ca.pem --cert me.pem --key me.key COMMAND ...
//	zkfleet-example --addr HOST:PORT --insecure [--client-id NAME] COMMAND ...
//
// Commands:
//
//	submit --circuit ID --input input.json [--input ...] [--request-id X]   prints the job_seq
//	submit --circuit ID --witness w.wtns [--witness ...] [--request-id X]   (inline witnesses, small jobs)
//	await JOB_SEQ      waits for the result; prints it as JSON; exit 0 only if SUCCEEDED
//	get JOB_SEQ        the job's state (JobInfo, JSON)
//	cancel JOB_SEQ
//	status             queues, counters, workers (StatusReply, JSON)
//	workers            the workers (JSON)
//
// Exit status, as zkctl's (docs/clients.md): 0 done (await: SUCCEEDED), 1 a
// gRPC error, a timeout or a result that is not a proof, 2 usage, 3 the job
// ended otherwise (FAILED, CANCELLED, ...), 4 its result passed the broker's
// retention (FAILED_PRECONDITION), 5 no such job (NOT_FOUND).
//
// Built offline in GOPATH mode against Debian's grpc-go 1.33 (clients/go/CMakeLists.txt):
// only APIs that this grpc-go has, and the generated code's getters, which
// both the APIv1 and the APIv2 protoc-gen-go emit.
package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	mathrand "math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/golang/protobuf/jsonpb"
	"github.com/golang/protobuf/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	zkfleetv1 "github.com/zkfleet/zkfleet/clients/go/zkfleetv1"
)

const (
	clientIDMetadata  = "zkfleet-client-id" // the caller's name in plaintext mode
	retryAfterTrailer = "retry-after-ms"    // with RESOURCE_EXHAUSTED: when to retry
	leaderTrailer     = "zkfleet-leader"    // a standby broker's UNAVAILABLE: the leader's gRPC address
	firstBackoff      = 100 * time.Millisecond
	maxBackoff        = 5 * time.Second
)

const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitJobFailed  = 3
	exitResultGone = 4
	exitUnknownJob = 5
)

type options struct {
	addr, ca, cert, key, clientID, serverName string
	insecure                                  bool
	timeout, rpcTimeout                       time.Duration
}

// usageError: bad flags or arguments (exit 2), nothing sent.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitCodeError: a failure with its own exit status (the job's end, ...).
type exitCodeError struct {
	code int
	msg  string
}

func (e exitCodeError) Error() string { return e.msg }

// rpcError: a gRPC call failed; its status code picks the exit status.
type rpcError struct {
	method string
	code   codes.Code
	msg    string
}

func (e rpcError) Error() string { return fmt.Sprintf("%s: %s: %s", e.method, e.code, e.msg) }

// notLeaderError: a standby broker answered (brokers on etcd): it did
// nothing; leader is the leading broker's gRPC address. Never retried at
// the standby: run() dials again with the leader first (a list), or says
// where the leader is (one address).
type notLeaderError struct {
	leader string
	status *status.Status
}

func (e notLeaderError) Error() string { return "UNAVAILABLE: " + e.status.Message() }

// GRPCStatus keeps status.Code and status.Convert working on it.
func (e notLeaderError) GRPCStatus() *status.Status { return e.status }

func asNotLeader(err error) (notLeaderError, bool) {
	var nl notLeaderError
	return nl, errors.As(err, &nl)
}

// notLeaderOf: the error a call ended with, as a notLeaderError when the
// trailer names a leader.
func notLeaderOf(err error, trailer metadata.MD) error {
	if leader := trailer.Get(leaderTrailer); err != nil && len(leader) > 0 && leader[0] != "" {
		return notLeaderError{leader: leader[0], status: status.Convert(err)}
	}
	return err
}

// The interceptors read every call's trailer for a standby's answer.
func unaryNotLeader(ctx context.Context, method string, req, reply interface{}, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var trailer metadata.MD
	err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Trailer(&trailer))...)
	return notLeaderOf(err, trailer)
}

type notLeaderStream struct{ grpc.ClientStream }

func (s notLeaderStream) RecvMsg(m interface{}) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil || err == io.EOF {
		return err
	}
	return notLeaderOf(err, s.ClientStream.Trailer())
}

func streamNotLeader(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	stream, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return notLeaderStream{stream}, nil
}

func newRPCError(method string, err error) rpcError {
	s := status.Convert(err)
	return rpcError{method, s.Code(), s.Message()}
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:7443", "the broker's gRPC address, host:port, or every broker's, comma-separated (brokers on etcd: the client follows the one that leads)")
	flag.StringVar(&o.ca, "ca", "", "PEM: the CA that signed the broker's certificate")
	flag.StringVar(&o.cert, "cert", "", "PEM: this client's certificate (its CN names the caller)")
	flag.StringVar(&o.key, "key", "", "PEM: the key of --cert")
	flag.StringVar(&o.serverName, "server-name", "", "the name to check in the broker's certificate (default: the host of --addr, the first one's of a list)")
	flag.BoolVar(&o.insecure, "insecure", false, "plaintext (a broker run with --grpc-insecure-plaintext)")
	flag.StringVar(&o.clientID, "client-id", "", "with --insecure: the caller's name (metadata "+clientIDMetadata+")")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "await: how long to wait for the result, reconnecting; submit: how long to retry")
	flag.DurationVar(&o.rpcTimeout, "rpc-timeout", 30*time.Second, "deadline of one unary call")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: zkfleet-example [flags] submit|await|get|cancel|jobs|retry|status|workers ...\n"+
			"  submit --circuit ID (--input input.json | --witness w.wtns)... [--request-id X] [--priority P]\n"+
			"  await JOB_SEQ | get JOB_SEQ | cancel JOB_SEQ | status | workers\n"+
			"  jobs [--state S]... [--circuit ID] [--client ID] [--page-size N] [--page-token T]\n"+
			"  retry [--attempt N] JOB_SEQ\nflags:\n")
		flag.PrintDefaults()
	}
	// --help is an answer, not a usage error: exit 0 (flag's ExitOnError would exit 2).
	flag.CommandLine.Init(os.Args[0], flag.ContinueOnError)
	if err := flag.CommandLine.Parse(os.Args[1:]); err == flag.ErrHelp {
		os.Exit(exitOK)
	} else if err != nil {
		os.Exit(exitUsage) // flag has printed the error and the usage
	}
	err := run(o, flag.Args())
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "zkfleet-example: %v\n", err)
	var ue usageError
	var ce exitCodeError
	var re rpcError
	switch {
	case errors.As(err, &ue):
		os.Exit(exitUsage)
	case errors.As(err, &ce):
		os.Exit(ce.code)
	case errors.As(err, &re) && re.code == codes.NotFound:
		os.Exit(exitUnknownJob)
	case errors.As(err, &re) && re.code == codes.FailedPrecondition && re.method != "SubmitJob" && re.method != "RetryJob":
		os.Exit(exitResultGone) // a result past --result-ttl (for SubmitJob: a reused request id)
	}
	os.Exit(exitError)
}

func run(o options, args []string) error {
	if len(args) == 0 {
		return usageError{"a command is needed: submit, await, get, cancel, jobs, retry, status or workers"}
	}
	command, args := args[0], args[1:]
	// Check the command's own arguments before connecting: a usage error sends nothing.
	var call func(context.Context, zkfleetv1.FleetClient) error
	switch command {
	case "submit":
		s, err := parseSubmit(args)
		if err != nil {
			return err
		}
		call = func(ctx context.Context, c zkfleetv1.FleetClient) error { return submit(ctx, o, c, s) }
	case "await", "get", "cancel":
		if len(args) != 1 {
			return usageError{command + " takes one argument, JOB_SEQ"}
		}
		seq, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return usageError{fmt.Sprintf("%s: JOB_SEQ %q is not a number", command, args[0])}
		}
		call = func(ctx context.Context, c zkfleetv1.FleetClient) error {
			switch command {
			case "await":
				return await(ctx, o, c, seq)
			case "get":
				return unary(ctx, o, "GetJob", func(ctx context.Context) (proto.Message, error) {
					return c.GetJob(ctx, &zkfleetv1.GetJobRequest{JobSeq: seq})
				})
			default:
				return unary(ctx, o, "CancelJob", func(ctx context.Context) (proto.Message, error) {
					return c.CancelJob(ctx, &zkfleetv1.CancelJobRequest{JobSeq: seq})
				})
			}
		}
	case "jobs":
		// One page of jobs, newest first (ListJobs): --state (repeatable), --circuit, --client, --page-token.
		fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
		fs.SetOutput(ioutil.Discard)
		var states repeated
		circuit := fs.String("circuit", "", "only this circuit's jobs")
		client := fs.String("client", "", "only this client's jobs (observe and admin keys)")
		pageSize := fs.Uint("page-size", 100, "jobs per page (at most 1000)")
		pageToken := fs.String("page-token", "", "next_page_token of the page before")
		fs.Var(&states, "state", "a job state: queued, running, succeeded, failed, dead_lettered, ... (repeatable)")
		if err := fs.Parse(args); err != nil {
			return usageError{"jobs: " + err.Error()}
		}
		request := &zkfleetv1.ListJobsRequest{CircuitId: *circuit, ClientId: *client, PageSize: uint32(*pageSize),
			PageToken: *pageToken}
		for _, name := range states {
			value, ok := zkfleetv1.JobState_value["JOB_STATE_"+strings.ToUpper(name)]
			if !ok {
				return usageError{fmt.Sprintf("jobs: unknown --state %q", name)}
			}
			request.States = append(request.States, zkfleetv1.JobState(value))
		}
		call = func(ctx context.Context, c zkfleetv1.FleetClient) error {
			return unary(ctx, o, "ListJobs", func(ctx context.Context) (proto.Message, error) {
				return c.ListJobs(ctx, request)
			})
		}
	case "retry":
		// A new round of a FAILED or DEAD_LETTERED job (RetryJob); --attempt N, default the next one.
		fs := flag.NewFlagSet("retry", flag.ContinueOnError)
		fs.SetOutput(ioutil.Discard)
		attempt := fs.Uint("attempt", 0, "the retry to make (idempotent per number; 0: the next one)")
		if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
			return usageError{"retry takes JOB_SEQ [--attempt N] (flags first)"}
		}
		seq, err := strconv.ParseUint(fs.Arg(0), 10, 64)
		if err != nil {
			return usageError{fmt.Sprintf("retry: JOB_SEQ %q is not a number", fs.Arg(0))}
		}
		call = func(ctx context.Context, c zkfleetv1.FleetClient) error {
			n := uint32(*attempt)
			if n == 0 {
				info, err := c.GetJob(ctx, &zkfleetv1.GetJobRequest{JobSeq: seq})
				if _, standby := asNotLeader(err); standby {
					return err
				}
				if err != nil {
					return newRPCError("GetJob", err)
				}
				n = info.Retries + 1
			}
			return unary(ctx, o, "RetryJob", func(ctx context.Context) (proto.Message, error) {
				return c.RetryJob(ctx, &zkfleetv1.RetryJobRequest{JobSeq: seq, Attempt: n})
			})
		}
	case "status", "workers":
		if len(args) != 0 {
			return usageError{command + " takes no argument"}
		}
		call = func(ctx context.Context, c zkfleetv1.FleetClient) error {
			return unary(ctx, o, command, func(ctx context.Context) (proto.Message, error) {
				if command == "status" {
					return c.GetStatus(ctx, &zkfleetv1.GetStatusRequest{})
				}
				return c.ListWorkers(ctx, &zkfleetv1.ListWorkersRequest{})
			})
		}
	default:
		return usageError{fmt.Sprintf("unknown command %q: submit, await, get, cancel, jobs, retry, status or workers", command)}
	}

	ctx := context.Background()
	if o.clientID != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, clientIDMetadata, o.clientID)
	}
	// A standby's answer: with every broker's address, the call goes again
	// over a channel that tries the leader it names first (once per broker
	// at most); with one address it is the answer.
	entries := strings.Split(o.addr, ",")
	for tries := 0; ; tries++ {
		conn, err := dial(o)
		if err != nil {
			return err
		}
		err = call(ctx, zkfleetv1.NewFleetClient(conn))
		conn.Close()
		nl, standby := asNotLeader(err)
		if !standby {
			return err
		}
		if len(entries) < 2 || tries+1 >= len(entries) {
			return fmt.Errorf("%s (give --addr %s, or every broker's address)", nl.Error(), nl.leader)
		}
		entries = leaderFirst(entries, nl.leader)
		o.addr = strings.Join(entries, ",")
		fmt.Fprintf(os.Stderr, "a standby answered; trying %s first\n", entries[0])
	}
}

// leaderFirst: the list with `leader` first when it holds it, else turned
// by one (the next broker first).
func leaderFirst(entries []string, leader string) []string {
	var out []string
	for _, entry := range entries {
		if strings.TrimSpace(entry) == leader {
			out = append(out, entry)
		}
	}
	if len(out) == 0 {
		return append(append([]string{}, entries[1:]...), entries[0])
	}
	for _, entry := range entries {
		if strings.TrimSpace(entry) != leader {
			out = append(out, entry)
		}
	}
	return out
}

// dial makes the channel: mTLS (the CA, the client's certificate) or, with
// --insecure, plaintext. It does not wait for the connection: the first
// call reports a broker out of reach or a refused handshake (UNAVAILABLE).
func dial(o options) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		// grpc's reconnect backoff grows to 120 s by default: far longer than
		// a broker restart, which await must ride out.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: firstBackoff, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)),
		grpc.WithUnaryInterceptor(unaryNotLeader),
		grpc.WithStreamInterceptor(streamNotLeader),
	}
	if o.insecure {
		if o.ca != "" || o.cert != "" || o.key != "" {
			return nil, usageError{"--insecure takes no --ca, --cert or --key"}
		}
		opts = append(opts, grpc.WithInsecure())
	} else {
		if o.clientID != "" {
			// Over TLS the certificate's CN names the caller: a declared
			// name would be ignored, and silently ignoring it misleads.
			return nil, usageError{"--client-id counts only with --insecure; over TLS the certificate's CN names the caller"}
		}
		if o.ca == "" || o.cert == "" || o.key == "" {
			return nil, usageError{"TLS needs --ca, --cert and --key (or --insecure)"}
		}
		config, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	}
	target, err := dialTarget(o.addr, &opts)
	if err != nil {
		return nil, err
	}
	return grpc.Dial(target, opts...)
}

// dialTarget: one address as it is; a list (brokers on etcd: only the
// leader listens) as one channel over all of them, gRPC's pick_first
// connecting to the first that answers, and again when it goes.
func dialTarget(addr string, opts *[]grpc.DialOption) (string, error) {
	entries := strings.Split(addr, ",")
	if len(entries) == 1 {
		return addr, nil
	}
	var list []resolver.Address
	for i, entry := range entries {
		entry = strings.TrimSpace(entry)
		if _, _, err := net.SplitHostPort(entry); err != nil {
			return "", usageError{fmt.Sprintf("--addr %q: entry %d is not host:port", addr, i+1)}
		}
		list = append(list, resolver.Address{Addr: entry})
	}
	r := manual.NewBuilderWithScheme("zkfleet-brokers")
	r.InitialState(resolver.State{Addresses: list})
	*opts = append(*opts, grpc.WithResolvers(r))
	return r.Scheme() + ":///brokers", nil
}

// serverName: the name checked in the broker's certificate: --server-name,
// else the host of --addr (the first one's of a list).
func serverName(o options) string {
	if o.serverName != "" {
		return o.serverName
	}
	host, _, err := net.SplitHostPort(strings.TrimSpace(strings.Split(o.addr, ",")[0]))
	if err != nil {
		return ""
	}
	return host
}

func tlsConfig(o options) (*tls.Config, error) {
	caPEM, err := ioutil.ReadFile(o.ca)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--ca: %v", err)}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, usageError{fmt.Sprintf("--ca %s: no PEM certificate in it", o.ca)}
	}
	pair, err := tls.LoadX509KeyPair(o.cert, o.key)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--cert/--key: %v", err)}
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, ServerName: serverName(o),
		MinVersion: tls.VersionTLS12}, nil
}

// ---------------------------------------------------------------- submit

type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

type submitArgs struct {
	request *zkfleetv1.SubmitJobRequest
}

func parseSubmit(args []string) (submitArgs, error) {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(ioutil.Discard) // our own one-line error instead
	var inputs, witnesses repeated
	circuit := fs.String("circuit", "", "the circuit id")
	requestID := fs.String("request-id", "", "idempotency key (default: a new random one)")
	priority := fs.String("priority", "normal", "low, normal, high or critical")
	fs.Var(&inputs, "input", "input.json of one partition (repeat per partition)")
	fs.Var(&witnesses, "witness", "a .wtns of one partition, sent inline (repeat per partition)")
	if err := fs.Parse(args); err != nil {
		return submitArgs{}, usageError{"submit: " + err.Error()}
	}
	if fs.NArg() != 0 {
		return submitArgs{}, usageError{fmt.Sprintf("submit: unexpected argument %q", fs.Arg(0))}
	}
	if *circuit == "" {
		return submitArgs{}, usageError{"submit: --circuit is required"}
	}
	if (len(inputs) == 0) == (len(witnesses) == 0) {
		return submitArgs{}, usageError{"submit: give --input (input.json per partition) or --witness (.wtns per partition), not both"}
	}
	p, ok := zkfleetv1.Priority_value["PRIORITY_"+strings.ToUpper(*priority)]
	if !ok || p == 0 {
		return submitArgs{}, usageError{fmt.Sprintf("submit: --priority %q: low, normal, high or critical", *priority)}
	}
	id := *requestID
	if id == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return submitArgs{}, err
		}
		id = "go-" + hex.EncodeToString(b[:])
	}
	request := &zkfleetv1.SubmitJobRequest{RequestId: id, CircuitId: *circuit, Priority: zkfleetv1.Priority(p)}
	for _, path := range inputs {
		data, err := ioutil.ReadFile(path)
		if err != nil {
			return submitArgs{}, usageError{fmt.Sprintf("submit: --input: %v", err)}
		}
		// The broker checks it too; refusing here says which file.
		var object map[string]json.RawMessage
		if err := json.Unmarshal(data, &object); err != nil {
			return submitArgs{}, usageError{fmt.Sprintf("submit: --input %s: not a JSON object: %v", path, err)}
		}
		request.Inputs = append(request.Inputs, data)
	}
	for _, path := range witnesses {
		data, err := ioutil.ReadFile(path)
		if err != nil {
			return submitArgs{}, usageError{fmt.Sprintf("submit: --witness: %v", err)}
		}
		request.Witnesses = append(request.Witnesses, data)
	}
	return submitArgs{request: request}, nil
}

// submit sends SubmitJob, and again (the same request, so the same request
// id: the broker makes one job) on UNAVAILABLE or RESOURCE_EXHAUSTED, until
// --timeout. Prints the job_seq.
func submit(ctx context.Context, o options, c zkfleetv1.FleetClient, s submitArgs) error {
	deadline := time.Now().Add(o.timeout)
	b := newBackoff()
	for {
		var trailer metadata.MD
		callCtx, cancel := context.WithTimeout(ctx, o.rpcTimeout)
		reply, err := c.SubmitJob(callCtx, s.request, grpc.Trailer(&trailer))
		cancel()
		if err == nil {
			if reply.GetDuplicate() {
				fmt.Fprintf(os.Stderr, "request id %s: an existing job\n", s.request.GetRequestId())
			}
			fmt.Println(reply.GetJobSeq())
			return nil
		}
		if _, standby := asNotLeader(err); standby {
			return err
		}
		code := status.Code(err)
		if code != codes.Unavailable && code != codes.ResourceExhausted {
			return newRPCError("SubmitJob", err)
		}
		pause := b.next(retryAfter(trailer))
		if time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("SubmitJob: still %s after %s (request id %s): %s", code, o.timeout,
				s.request.GetRequestId(), status.Convert(err).Message())
		}
		fmt.Fprintf(os.Stderr, "SubmitJob: %s, retrying in %s\n", code, pause.Round(time.Millisecond))
		time.Sleep(pause)
	}
}

func retryAfter(trailer metadata.MD) time.Duration {
	for _, v := range trailer.Get(retryAfterTrailer) {
		if ms, err := strconv.ParseUint(v, 10, 32); err == nil {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return 0
}

// ---------------------------------------------------------------- await

type backoffState struct{ delay time.Duration }

func newBackoff() *backoffState { return &backoffState{delay: firstBackoff} }

// next: the pause before the next try, jittered, doubling up to maxBackoff,
// never below the broker's hint.
func (b *backoffState) next(atLeast time.Duration) time.Duration {
	pause := time.Duration(float64(b.delay) * (0.8 + 0.4*mathrand.Float64()))
	if pause < atLeast {
		pause = atLeast
	}
	if b.delay *= 2; b.delay > maxBackoff {
		b.delay = maxBackoff
	}
	return pause
}

// await calls AwaitJob until it yields the result. UNAVAILABLE (a broker
// restart ends the stream so; or the broker is not back yet) and a stream
// that ends without a result are waited out: AwaitJob again, with backoff,
// until --timeout. The broker keeps the job and its result across a
// restart, so nothing is lost by calling again.
func await(ctx context.Context, o options, c zkfleetv1.FleetClient, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	b := newBackoff()
	last := "no reply"
	for {
		result, err := awaitOnce(ctx, c, seq, b)
		if result != nil {
			return printResult(result)
		}
		if _, standby := asNotLeader(err); standby {
			return err
		}
		switch {
		case ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded:
			return fmt.Errorf("job %d: no result within %s (last: %s)", seq, o.timeout, last)
		case err == nil:
			last = "the stream ended without a result"
		case status.Code(err) == codes.Unavailable:
			last = "UNAVAILABLE: " + status.Convert(err).Message()
		default:
			return newRPCError("AwaitJob", err)
		}
		pause := b.next(0)
		fmt.Fprintf(os.Stderr, "AwaitJob: %s; calling again in %s\n", last, pause.Round(time.Millisecond))
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
	}
}

// awaitOnce: one AwaitJob stream. The result, or (nil, the error that ended
// the stream; nil when it ended without a result).
func awaitOnce(ctx context.Context, c zkfleetv1.FleetClient, seq uint64, b *backoffState) (*zkfleetv1.JobResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream whatever happens
	stream, err := c.AwaitJob(ctx, &zkfleetv1.AwaitJobRequest{JobSeq: seq})
	if err != nil {
		return nil, err
	}
	for {
		update, err := stream.Recv()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		*b = *newBackoff() // the broker answered: a later retry starts afresh
		if result := update.GetResult(); result != nil {
			return result, nil
		}
		if info := update.GetState(); info != nil {
			fmt.Fprintf(os.Stderr, "job %d: %s (%d/%d partitions done)\n", seq, stateName(info.GetState()),
				info.GetPartitionsDone(), info.GetPartitions())
		}
	}
}

func stateName(s zkfleetv1.JobState) string { return strings.TrimPrefix(s.String(), "JOB_STATE_") }

type partitionOut struct {
	Partition uint32          `json:"partition"`
	Proof     json.RawMessage `json:"proof"`
	Public    json.RawMessage `json:"public"`
	WorkerID  string          `json:"worker_id"`
}

type resultOut struct {
	JobSeq     uint64         `json:"job_seq"`
	RequestID  string         `json:"request_id"`
	CircuitID  string         `json:"circuit_id"`
	State      string         `json:"state"`
	Error      string         `json:"error,omitempty"`
	Partitions []partitionOut `json:"partitions"`
}

// rawJSON: text as JSON if it is JSON, else as a JSON string (a failed
// job's partial text is kept, not lost).
func rawJSON(text string) (json.RawMessage, bool) {
	if json.Valid([]byte(text)) {
		return json.RawMessage(text), true
	}
	quoted, _ := json.Marshal(text)
	return json.RawMessage(quoted), false
}

// printResult prints the result as JSON on stdout; an error (exit non-zero)
// unless it SUCCEEDED with a proof per partition, each proof and public
// signals JSON: "no proof" is never a success.
func printResult(r *zkfleetv1.JobResult) error {
	out := resultOut{JobSeq: r.GetJobSeq(), RequestID: r.GetRequestId(), CircuitID: r.GetCircuitId(),
		State: stateName(r.GetState()), Error: r.GetError(), Partitions: []partitionOut{}}
	var invalid []string
	for _, p := range r.GetPartitions() {
		proof, proofOK := rawJSON(p.GetProofJson())
		public, publicOK := rawJSON(p.GetPublicJson())
		if !proofOK || !publicOK {
			invalid = append(invalid, strconv.FormatUint(uint64(p.GetPartition()), 10))
		}
		out.Partitions = append(out.Partitions, partitionOut{Partition: p.GetPartition(), Proof: proof,
			Public: public, WorkerID: p.GetWorkerId()})
	}
	text, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(text))
	switch {
	case r.GetState() != zkfleetv1.JobState_JOB_STATE_SUCCEEDED:
		msg := fmt.Sprintf("job %d ended %s", r.GetJobSeq(), out.State)
		if r.GetError() != "" {
			msg += ": " + r.GetError()
		}
		return exitCodeError{exitJobFailed, msg}
	case len(r.GetPartitions()) == 0:
		return exitCodeError{exitError, fmt.Sprintf("job %d: SUCCEEDED without a proof: refused", r.GetJobSeq())}
	case len(invalid) > 0:
		return exitCodeError{exitError, fmt.Sprintf("job %d: SUCCEEDED, but the proof or public signals of partition(s) %s are not JSON: refused",
			r.GetJobSeq(), strings.Join(invalid, ", "))}
	}
	return nil
}

// ---------------------------------------------------------------- the others

// unary runs one call under --rpc-timeout and prints its reply as JSON
// (the proto field names; enums by name).
func unary(ctx context.Context, o options, method string, call func(context.Context) (proto.Message, error)) error {
	ctx, cancel := context.WithTimeout(ctx, o.rpcTimeout)
	defer cancel()
	reply, err := call(ctx)
	if _, standby := asNotLeader(err); standby {
		return err
	}
	if err != nil {
		return newRPCError(method, err)
	}
	m := jsonpb.Marshaler{OrigName: true, Indent: "  "}
	text, err := m.MarshalToString(reply)
	if err != nil {
		return err
	}
	fmt.Println(text)
	return nil
}
