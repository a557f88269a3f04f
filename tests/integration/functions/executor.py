"""A stand-in for the Inngest executor: plays the server over HTTP against the app's `/api/inngest`.

The Inngest server cannot be installed here, so this harness does what it does for one run: it POSTs
server-shaped bodies (`event`, `events`, `steps`, `ctx` with `run_id`, `attempt`, `max_attempts` and the
memoized `stack`) with the query parameters the SDK reads (`fnId`, `stepId`), follows 206 step responses
(memoizing `step.run` results under their hashed ids, recording sleeps, playing `step.invoke` by running the
invoked function), retries 500s and step errors until the attempts run out or the SDK says no-retry, and
then plays `inngest/function.failed` to the function's on-failure handler. Every body goes through JSON
both ways, and in production mode every request is signed and every response signature checked.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from inngest._internal import net, server_lib

APP_ID = "ac-context"


class SignatureError(AssertionError):
    """A response from the SDK carried no valid signature."""


@dataclass
class RunResult:
    """What one played run did."""

    status: str
    """`completed` or `failed`."""
    output: Any = None
    """The function's return value (completed) or its error body (failed)."""
    requests: int = 0
    """HTTP requests the run took."""
    function_attempts: int = 1
    """Attempts at the function level (1 when nothing failed at the function level)."""
    step_errors: list[str] = field(default_factory=list)
    """Display names of step attempts that errored (each one a retry)."""
    step_error_bodies: list[Any] = field(default_factory=list)
    """The error body the SDK sent for each step attempt that errored, in order."""
    steps: dict[str, Any] = field(default_factory=dict)
    """The memoized state at the end, keyed by hashed step id, as the server keeps it."""
    step_names: list[str] = field(default_factory=list)
    """Display names of the memoized steps, in order."""
    step_outputs: dict[str, Any] = field(default_factory=dict)
    """Memoized `step.run` data by display name (the last one wins for a reused name)."""
    sleeps: list[str] = field(default_factory=list)
    """Display names of the sleeps the run asked for."""
    on_failure: RunResult | None = None
    """The on-failure handler's run, when the function failed and has one."""
    run_id: str = ""
    """The run id the harness made up."""
    last_body: dict[str, Any] = field(default_factory=dict)
    """The last request body sent, to replay it."""


class InngestExecutor:
    """Plays the Inngest server for functions served at `path` by the ASGI app behind `http`."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        signing_key: str | None = None,
        path: str = "/api/inngest",
        app_id: str = APP_ID,
        on_sleep: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.on_sleep = on_sleep
        """Called with a sleep's name while the run sleeps: what happens in the world meanwhile."""
        self.http = http
        self.signing_key = signing_key
        self.path = path
        self.app_id = app_id

    def full_id(self, fn_id: str) -> str:
        """The fully qualified id the SDK serves a function under."""
        return fn_id if fn_id.startswith(f"{self.app_id}-") else f"{self.app_id}-{fn_id}"

    async def post(self, fn_id: str, body: dict[str, Any], *, step_id: str = "step") -> httpx.Response:
        """One signed (in production) POST of a JSON body to the function; checks the response signature."""
        raw = json.dumps(body).encode()
        headers = {"content-type": "application/json"}
        if self.signing_key is not None:
            signature = net.sign_request(raw, self.signing_key)
            assert isinstance(signature, str)
            headers["x-inngest-signature"] = signature
            headers["x-inngest-server-kind"] = "cloud"
        else:
            headers["x-inngest-server-kind"] = "dev"
        response = await self.http.post(
            self.path, params={"fnId": self.full_id(fn_id), "stepId": step_id}, content=raw, headers=headers
        )
        if self.signing_key is not None and response.status_code != 401:
            checked = net.validate_response_sig(
                body=response.content,
                headers={k.lower(): v for k, v in response.headers.items()},
                mode=server_lib.ServerKind.CLOUD,
                signing_key=self.signing_key,
            )
            if isinstance(checked, Exception):
                raise SignatureError(f"response signature invalid: {checked}")
        return response

    @staticmethod
    def body(
        event: dict[str, Any], steps: dict[str, Any], stack: list[str], *, run_id: str, attempt: int, max_attempts: int
    ) -> dict[str, Any]:
        """A server-shaped request body."""
        return {
            "event": event,
            "events": [event],
            "steps": steps,
            "ctx": {
                "run_id": run_id,
                "attempt": attempt,
                "max_attempts": max_attempts,
                "disable_immediate_execution": False,
                "stack": {"stack": list(stack)},
            },
            "use_api": False,
            "version": 1,
        }

    async def run(
        self,
        fn_id: str,
        event: dict[str, Any],
        *,
        retries: int = 3,
        steps: dict[str, Any] | None = None,
        play_on_failure: bool = True,
        max_requests: int = 200,
    ) -> RunResult:
        """Play one run of `fn_id` for `event` to its end; `retries` as the function declares them."""
        event = json.loads(json.dumps({"data": {}, "id": "", "ts": 0, **event}))
        max_attempts = retries + 1
        result = RunResult(status="running", run_id=uuid.uuid4().hex, steps=dict(steps or {}))
        stack: list[str] = list(result.steps)
        attempt = 0  # per step, as the server counts it; a completed step resets it
        function_attempt = 0
        while result.requests < max_requests:
            body = self.body(
                event, result.steps, stack, run_id=result.run_id, attempt=attempt, max_attempts=max_attempts
            )
            result.last_body = body
            response = await self.post(fn_id, body)
            result.requests += 1
            payload = json.loads(response.content) if response.content else None
            if response.status_code == 200:
                result.status, result.output = "completed", payload
                result.function_attempts = function_attempt + 1
                return result
            if response.status_code == 206:
                attempt = await self._apply_ops(payload, result, stack, attempt, max_attempts)
                continue
            if response.status_code == 401:
                result.status, result.output = "unauthorized", payload
                return result
            no_retry = response.headers.get("x-inngest-no-retry") == "true"
            if no_retry or function_attempt + 1 >= max_attempts:
                result.status, result.output = "failed", payload
                result.function_attempts = function_attempt + 1
                if play_on_failure:
                    result.on_failure = await self._on_failure(fn_id, event, payload, result.run_id)
                return result
            function_attempt += 1
            attempt = function_attempt
        raise AssertionError(f"run of {fn_id} did not finish in {max_requests} requests")

    async def _apply_ops(
        self, ops: list[dict[str, Any]], result: RunResult, stack: list[str], attempt: int, max_attempts: int
    ) -> int:
        for op in ops:
            kind, hashed, name = op["op"], op["id"], op.get("displayName") or op.get("name")
            if kind == "StepRun":
                self._memo(result, stack, hashed, name, {"data": op.get("data")})
                result.step_outputs[name] = op.get("data")
                attempt = 0
            elif kind == "StepError":
                result.step_errors.append(name)
                result.step_error_bodies.append(op.get("error"))
                attempt += 1
                if attempt >= max_attempts:  # the SDK would have said StepFailed; be strict
                    raise AssertionError(f"step {name} errored past its last attempt without StepFailed")
            elif kind == "StepFailed":
                result.step_errors.append(name)
                result.step_error_bodies.append(op.get("error"))
                self._memo(result, stack, hashed, name, {"error": op["error"]})
                attempt = 0
            elif kind == "Sleep":
                result.sleeps.append(name)
                if self.on_sleep is not None:
                    await self.on_sleep(name)
                self._memo(result, stack, hashed, name, None)
                attempt = 0
            elif kind == "InvokeFunction":
                opts = op["opts"]
                invoked = await self.run(
                    opts["function_id"],
                    {"name": "inngest/function.invoked", "data": opts["payload"]["data"] or {}},
                )
                memo = (
                    {"data": invoked.output}
                    if invoked.status == "completed"
                    else {"error": invoked.output or {"name": "Error", "message": "invoked function failed"}}
                )
                self._memo(result, stack, hashed, name, memo)
                attempt = 0
            elif kind == "WaitForEvent":
                self._memo(result, stack, hashed, name, None)  # the wait times out
                attempt = 0
            else:
                raise AssertionError(f"the harness does not play op {kind}")
        return attempt

    @staticmethod
    def _memo(result: RunResult, stack: list[str], hashed: str, name: str, value: Any) -> None:
        result.steps[hashed] = json.loads(json.dumps(value))
        stack.append(hashed)
        result.step_names.append(name)

    async def _on_failure(self, fn_id: str, event: dict[str, Any], error: Any, run_id: str) -> RunResult | None:
        full = self.full_id(fn_id)
        failed_event = {
            "name": "inngest/function.failed",
            "data": {"function_id": full, "run_id": run_id, "error": error, "event": event},
        }
        played = await self.run(f"{full}-failure", failed_event, retries=0, play_on_failure=False)
        if isinstance(played.output, dict) and played.output.get("code") == "function_not_found":
            return None
        return played
