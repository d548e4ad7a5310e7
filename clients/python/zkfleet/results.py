"""Results of jobs, as the application sees them: parsed JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List

from ._wire import job_state_name, pb


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # never expected from a worker; kept as text rather than lost


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
        partitions = []
        for p in message.partitions:
            t = p.timings
            partitions.append(Proof(
                partition=p.partition, proof=_parse_json(p.proof_json), public=_parse_json(p.public_json),
                worker_id=p.worker_id, attempts=p.attempts,
                timings={"queue_wait_s": t.queue_wait_s, "witness_transfer_s": t.witness_transfer_s,
                         "build_abc_s": t.build_abc_s, "ntt_s": t.ntt_s, "msm_s": t.msm_s,
                         "prove_total_s": t.prove_total_s}))
        return cls(job_seq=message.job_seq, request_id=message.request_id, circuit=message.circuit_id,
                   state=job_state_name(message.state), error=message.error, partitions=partitions,
                   submitted_unix_s=message.submitted_unix_s, finished_unix_s=message.finished_unix_s)


@dataclass
class CancelResult:
    """``cancelled`` is False when the job had already ended (``state`` says how)."""

    job_seq: int
    cancelled: bool
    state: str
