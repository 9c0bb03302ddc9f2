"""Use cases, one module each: one transaction over inputs already authorised.

An operation composes the pure rules (`governance/*.py`), the adapters (`governance/adapters/`) and the
statements (`governance/storage/`); it holds no SQL text and checks no permission. `api/services/`
authorises and maps schemas, then calls an operation; `activities/` heartbeat and map failures to
Temporal's, then call the same operation. So each use case has one home:

- `approaches`: record an attempted approach, check a proposal against the failed ones;
- `changes`: apply a change to published memory (supersede, retire, lift), directly or once approved;
- `lifting`: a lift's copies published at the wider scope, its originals marked lifted;
- `publishing`: publish one candidate against its scope's heads (dedup, supersession, bug patterns);
- `retention`: prune what the retention rules choose, a batch per transaction;
- `reflection`: link published insights to the episodes they distil;
- `trust`: what moves a memory's trust (a validation, a feedback vote, a code-rule observation, a decay
  policy), each refusing a principal involved in the memory inside its transaction;

and, by the same pattern, `erasure` (a principal's, a task's or a subject's traces) as its use case moves
out of the service that holds it today.
"""
