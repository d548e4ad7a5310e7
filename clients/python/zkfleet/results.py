"""Results of jobs, as the application sees them: parsed JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List

from ._wire import job_state_name, pb
from .errors import InvalidResult


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text  # a job that did not succeed: its partial text kept rather than lost


def _parse_proof_json(job_seq: int, partition: int, field: str, text: str) -> Any:
    """``text`` parsed; :class:`InvalidResult` when it is not JSON (or nests
    deeper than Python's parser goes: no snarkjs document does)."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise InvalidResult(job_seq, partition, field, text, f"is not JSON ({e}): {text[:60]!r}") from None
    except RecursionError:
        raise InvalidResult(job_seq, partition, field, text, "is nested too deeply to be a proof") from None


@dataclass
class Proof:
    """One partition's proof, as snarkjs writes proof.json and public.json."""

    partition: int
    proof: Any            # proof.json, parsed (a dict: pi_a, pi_b, pi_c, protocol, curve)
    public: Any           # public.json, parsed (a list of decimal strings)
    worker_id: str
    attempts: int
    timings: Dict[str, float] = field(default_factory=dict)


@dataclass
class JobResult:
    """How a job ended: its state, and for a SUCCEEDED job a proof per partition."""

    job_seq: int
    request_id: str
    circuit: str
    state: str            # "SUCCEEDED", "FAILED", "DEAD_LETTERED", "CANCELLED", "EXPIRED"
    error: str            # the reason when it did not succeed
    partitions: List[Proof]
    submitted_unix_s: float
    finished_unix_s: float

    @property
    def succeeded(self) -> bool:
        return self.state == "SUCCEEDED"

    @classmethod
    def from_proto(cls, message: "pb.JobResult") -> "JobResult":
        """The result with its JSON parsed. Raises :class:`~zkfleet.InvalidResult`
        for a SUCCEEDED result without partitions or with a partition whose
        ``proof_json`` or ``public_json`` is not JSON."""
        succeeded = message.state == pb.JOB_STATE_SUCCEEDED
        if succeeded and not message.partitions:
            raise InvalidResult(message.job_seq, None, None, "", "holds no partition")
        partitions = []
        for p in message.partitions:
            t = p.timings
            if succeeded:
                proof = _parse_proof_json(message.job_seq, p.partition, "proof_json", p.proof_json)
                public = _parse_proof_json(message.job_seq, p.partition, "public_json", p.public_json)
            else:
                proof, public = _parse_json(p.proof_json), _parse_json(p.public_json)
            partitions.append(Proof(
                partition=p.partition, proof=proof, public=public,
                worker_id=p.worker_id, attempts=p.attempts,
                timings={"queue_wait_s": t.queue_wait_s, "witness_transfer_s": t.witness_transfer_s,
                         "build_abc_s": t.build_abc_s, "ntt_s": t.ntt_s, "msm_s": t.msm_s,
                         "prove_total_s": t.prove_total_s, "witness_generation_s": t.witness_generation_s,
                         "generation_queue_s": t.generation_queue_s}))
        return cls(job_seq=message.job_seq, request_id=message.request_id, circuit=message.circuit_id,
                   state=job_state_name(message.state), error=message.error, partitions=partitions,
                   submitted_unix_s=message.submitted_unix_s, finished_unix_s=message.finished_unix_s)


@dataclass
class CancelResult:
    """``cancelled`` is False when the job had already ended (``state`` says how)."""

    job_seq: int
    cancelled: bool
    state: str
