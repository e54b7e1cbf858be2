"""The runs API: start, follow over SSE (resumable), read, stop, approve."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
import trio

from actors.platform.api.gateway import api_session_id
from tests.api.harness import ApiDaemon, sse_frames, wait_until


async def _start(http: httpx2.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await http.post("/v1/runs", json=body)
    assert response.status_code == 202, response.text
    return response.json()


async def _events(http: httpx2.AsyncClient, run_id: str, last_event_id: int | None = None) -> list[dict[str, str]]:
    headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else {}
    with trio.fail_after(10):
        response = await http.get(f"/v1/runs/{run_id}/events", headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    return sse_frames(response.text)


class TestRunLifecycle:
    """A run is accepted at once, its events stream over SSE and its result is kept."""

    async def test_run_completes_and_events_resume(self, api: ApiDaemon) -> None:
        """202 with run_id; SSE events numbered by seq ending in 'end'; Last-Event-ID resumes after that id."""
        api.provider.push({"text": "run answer in five words", "usage": {"prompt_tokens": 20, "completion_tokens": 5}})
        async with api.http() as http:
            accepted = await _start(http, input="do the thing", instructions="RUN-INSTRUCTIONS")
            run_id = accepted["run_id"]
            assert run_id.startswith("run_") and accepted["status"] in ("queued", "running")
            frames = await _events(http, run_id)
            assert frames[-1]["event"] == "end"
            assert json.loads(frames[-1]["data"]) == {"run_id": run_id, "status": "completed"}
            events = frames[:-1]
            ids = [int(f["id"]) for f in events]
            assert ids == sorted(ids) and len(set(ids)) == len(ids)
            assert events[0]["event"] == "turn_started" and events[-1]["event"] == "turn_finished"
            deltas = "".join(json.loads(f["data"])["text"] for f in events if f["event"] == "text_delta")
            assert deltas == "run answer in five words"
            middle = ids[len(ids) // 2]
            resumed = await _events(http, run_id, middle)
            assert [int(f["id"]) for f in resumed[:-1]] == [i for i in ids if i > middle]
            status = (await http.get(f"/v1/runs/{run_id}")).json()
        assert status["status"] == "completed" and status["output"] == "run answer in five words"
        assert status["usage"] == {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
        assert "RUN-INSTRUCTIONS" in json.dumps(api.provider.requests[-1].body["messages"])
        await wait_until(lambda: not api.session_paths())

    async def test_run_in_named_session(self, api: ApiDaemon) -> None:
        """With session_id the run continues that session, which stays alive."""
        api.provider.push({"text": "named run"})
        async with api.http() as http:
            run = await _start(http, input="hello", session_id="runs-session")
            await _events(http, run["run_id"])
            status = (await http.get(f"/v1/runs/{run['run_id']}")).json()
            bad_last = await http.get(f"/v1/runs/{run['run_id']}/events", headers={"Last-Event-ID": "abc"})
            assert bad_last.status_code == 400
        assert status["session_id"] == "runs-session" and status["output"] == "named run"
        assert f"sessions/session:{api_session_id('runs-session')}" in api.session_paths()

    async def test_unknown_run_and_bad_input(self, api: ApiDaemon) -> None:
        """Unknown run ids are 404 everywhere; a run without input is 400."""
        async with api.http() as http:
            for method, path in (("GET", "/v1/runs/run_x"), ("GET", "/v1/runs/run_x/events"), ("POST", "/v1/runs/run_x/stop")):
                response = await http.request(method, path)
                assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
            bad = await http.post("/v1/runs", json={"input": ""})
            assert bad.status_code == 400


class TestStop:
    """POST /v1/runs/{id}/stop interrupts the run's turn."""

    async def test_stop_running(self, api: ApiDaemon) -> None:
        """'stopping' at once, then the run ends 'stopped' long before its answer would have finished."""
        api.provider.push({"text": " ".join(f"w{i}" for i in range(200)), "chunk_delay": 0.05})
        started = trio.current_time()
        async with api.http() as http:
            run = await _start(http, input="long job")
            await api.provider.wait_requests(1)
            stop = await http.post(f"/v1/runs/{run['run_id']}/stop")
            assert stop.status_code == 200
            assert stop.json() == {"run_id": run["run_id"], "status": "stopping"}
            frames = await _events(http, run["run_id"])
            status = (await http.get(f"/v1/runs/{run['run_id']}")).json()
        assert json.loads(frames[-1]["data"])["status"] == "stopped"
        assert status["status"] == "stopped"
        assert trio.current_time() - started < 5.0
        await wait_until(lambda: not api.session_paths())

    async def test_stop_queued_run_spares_the_running_turn(self, api: ApiDaemon) -> None:
        """A run queued behind another client's turn: stopping it never interrupts that turn."""
        api.provider.push({"text": "first client answer here", "chunk_delay": 0.05}, {"text": "never shown"})
        headers = {"X-Hermes-Session-Id": "busy-session"}
        async with api.client() as client:
            async with trio.open_nursery() as nursery:
                answers: list[str] = []

                async def first() -> None:
                    reply = await client.chat.completions.create(
                        model="scripted-model", messages=[{"role": "user", "content": "one"}], extra_headers=headers
                    )
                    answers.append(reply.choices[0].message.content or "")

                nursery.start_soon(first)
                await api.provider.wait_requests(1)
                async with api.http() as http:
                    run = await _start(http, input="two", session_id="busy-session")
                    assert run["status"] == "queued"
                    stop = await http.post(f"/v1/runs/{run['run_id']}/stop")
                    assert stop.json()["status"] == "stopping"
                    frames = await _events(http, run["run_id"])
        assert answers == ["first client answer here"]
        assert json.loads(frames[-1]["data"])["status"] == "stopped"


class TestApproval:
    """A dangerous command in a run waits for POST /v1/runs/{id}/approval."""

    @pytest.mark.parametrize("choice", ["once", "always"])
    async def test_approve(self, api: ApiDaemon, choice: str) -> None:
        """The approval request shows in the run; 'once' or 'always' lets the command run and the run completes."""
        victim = api.workdir / "victim"
        victim.mkdir()
        api.provider.push(
            {"tool_calls": [{"id": "call_rm", "name": "terminal", "arguments": {"command": f"rm -r {victim}"}}]},
            {"text": "Removed."},
        )
        async with api.http() as http:
            run = await _start(http, input="remove it")
            run_id = run["run_id"]
            with trio.fail_after(10):
                while not (status := (await http.get(f"/v1/runs/{run_id}")).json())["pending_approvals"]:
                    await trio.sleep(0.02)
            nothing = await http.post(f"/v1/runs/{run_id}/approval", json={"choice": "maybe"})
            assert nothing.status_code == 400
            answer = await http.post(f"/v1/runs/{run_id}/approval", json={"choice": choice})
            assert answer.status_code == 200, answer.text
            pending = status["pending_approvals"]
            assert [(p["command"], p["choices"]) for p in pending] == [(f"rm -r {victim}", ["once", "session", "always", "deny"])]
            assert pending[0]["description"]
            assert answer.json()["request_id"] == pending[0]["request_id"]
            again = await http.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})
            assert again.status_code == 409
            frames = await _events(http, run_id)
        names = [f["event"] for f in frames]
        assert "approval_requested" in names and "request_resolved" in names
        assert json.loads(frames[-1]["data"])["status"] == "completed"
        assert not victim.exists()
