"""The scripted provider server itself: script validation, admin endpoints, rules, CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx2
import pytest
import trio

from messages.chat import message_to_dict
from config.providers import StreamingConfig
from messages.events import TextDelta
from providers import ProviderSettings, ScriptError, ToolCallCompleted, make_adapter
from providers.scripted import Step, parse_steps, serve_scripted_provider
from providers.scripted.rules import DEMO_SCRIPT, LABEL

from .conftest import MODES, TERMINAL_TOOL, adapter_for, collect, request, settings_for


def _tool(name: str, props: dict | None = None) -> dict:
    return {"type": "function", "function": {"name": name, "description": name, "parameters": {"type": "object", "properties": props or {}}}}


DEMO_TOOLS = [TERMINAL_TOOL, _tool("execute_code", {"code": {"type": "string"}}), _tool("delegate_task", {"tasks": {"type": "array"}})]


class TestSteps:
    """Steps are validated; a bad one names the problem."""

    @pytest.mark.parametrize(
        ("step", "problem"),
        [
            ({"txt": "typo"}, "unknown step key"),
            ({"text": 5}, "text must be str"),
            ({"chunks": 0}, "chunks must be an integer"),
            ({"error": {"status": 200}}, "error.status"),
            ({"finish_reason": "done"}, "finish_reason"),
            ({"tool_calls": [{"arguments": {}}]}, "tool_calls[0]"),
            ({"usage": {"tokens": 3}}, "usage"),
            ({"chunk_delay": -1}, "chunk_delay"),
            ("just text", "JSON object"),
        ],
    )
    def test_invalid(self, step, problem):
        with pytest.raises(ScriptError, match=problem.replace("[", r"\[").replace("]", r"\]")):
            parse_steps(step)

    def test_forms(self):
        assert parse_steps({"text": "a"}) == [Step(text="a")]
        assert parse_steps([{"text": "a"}, {"text": "b"}])[1].text == "b"
        assert parse_steps({"steps": [{"text": "c"}]})[0].text == "c"

    def test_a_null_after_chunks_is_the_default(self) -> None:
        """A mid-stream error with ``after_chunks: null`` fires where the default says, not never."""
        default = parse_steps({"mid_stream_error": {}})[0].mid_stream_error
        given_null = parse_steps({"mid_stream_error": {"after_chunks": None}})[0].mid_stream_error
        assert default is not None and given_null is not None
        assert given_null.after_chunks == default.after_chunks

    def test_bad_push_queues_nothing(self):
        with pytest.raises(ScriptError, match="step 1"):
            parse_steps([{"text": "ok"}, {"bogus": 1}])


class TestNonStreaming:
    """Non-streaming calls get the provider's plain JSON object."""

    async def test_openai_and_anthropic_objects(self, server, pool):
        server.push({"text": "plain", "tool_calls": [{"id": "c1", "name": "terminal", "arguments": {"command": "ls"}}]}, {"text": "plain2"})
        oai = pool.get_openai(settings_for(server, "chat_completions"))
        completion = await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert completion.choices[0].message.content == "plain"
        assert completion.choices[0].message.tool_calls[0].function.arguments == '{"command": "ls"}'
        anth = pool.get_anthropic(settings_for(server, "anthropic_messages"))
        message = await anth.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
        assert message.content[0].text == "plain2"
        assert message.stop_reason == "end_turn"

    async def test_responses_object(self, server, pool):
        server.push({"text": "plain3", "finish_reason": "length"})
        oai = pool.get_openai(settings_for(server, "codex_responses"))
        response = await oai.responses.create(model="m", input="x")
        assert response.output_text == "plain3"
        assert response.status == "incomplete"
        assert response.incomplete_details.reason == "max_output_tokens"


class TestAdmin:
    """Out-of-process scripting: append steps, read records, reset."""

    async def test_admin_round_trip(self, server, pool):
        root = server.root_url
        async with httpx2.AsyncClient() as http:
            resp = await http.post(f"{root}/_admin/script", json=[{"text": "from admin"}])
            assert resp.status_code == 200 and resp.json() == {"queued": 1}
            bad = await http.post(f"{root}/_admin/script", json={"nope": 1})
            assert bad.status_code == 400 and "unknown step key" in bad.json()["error"]
            events = await collect(adapter_for(server, pool, "chat_completions"), request())
            assert message_to_dict(events[-1].message)["content"] == "from admin"
            records = (await http.get(f"{root}/_admin/requests")).json()
            assert [r["path"] for r in records["requests"]] == ["/v1/chat/completions"]
            assert records["requests"][0]["body"]["messages"] == [{"role": "user", "content": "hi"}]
            assert records["requests"][0]["headers"]["authorization"] == "Bearer sk-test-key"
            await http.post(f"{root}/_admin/reset")
            assert (await http.get(f"{root}/_admin/requests")).json()["requests"] == []

    async def test_bad_json_body_gets_400_and_server_survives(self, server, pool):
        async with httpx2.AsyncClient() as http:
            resp = await http.post(f"{server.base_url}/chat/completions", content=b"{broken")
            assert resp.status_code == 400
            assert "JSON object" in resp.json()["error"]["message"]
            missing = await http.get(f"{server.base_url}/nowhere")
            assert missing.status_code == 404
        server.push({"text": "still fine"})
        events = await collect(adapter_for(server, pool, "chat_completions"), request())
        assert message_to_dict(events[-1].message)["content"] == "still fine"

    async def test_chunk_delay_paces_stream(self, server, pool):
        # Real clock: an autojump clock would also jump past the client's socket reads.
        server.push({"text": "a b c d", "chunk_delay": 0.04})
        start = trio.current_time()
        events = await collect(adapter_for(server, pool, "chat_completions"), request())
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "a b c d"
        assert trio.current_time() - start >= 0.04 * 5


@pytest.mark.parametrize("mode", MODES)
class TestRules:
    """Rule mode plays terminal -> execute_code -> delegate_task -> summary, in every wire format."""

    async def test_demo_flow(self, pool, mode):
        async with serve_scripted_provider(rule_mode=True) as server:
            adapter = adapter_for(server, pool, mode)
            system = "You are Hermes. Use delegate_task to hand work to subagents."
            history = [{"role": "system", "content": system}, {"role": "user", "content": "run the demo"}]
            seen = []
            outputs = {"terminal": "Linux box 6.1", "execute_code": '{"whoami": "demo"}', "delegate_task": "both done"}
            for _ in range(4):
                events = await collect(adapter, request(history, tools=DEMO_TOOLS))
                message = message_to_dict(events[-1].message)
                history.append(message)
                calls = [e for e in events if isinstance(e, ToolCallCompleted)]
                if not calls:
                    break
                for call in calls:
                    seen.append((call.name, json.loads(call.arguments)))
                    history.append({"role": "tool", "tool_call_id": call.call_id, "content": outputs[call.name]})
            assert [name for name, _ in seen] == ["terminal", "execute_code", "delegate_task"]
            assert seen[0][1] == {"command": "uname -a"}
            assert seen[1][1]["code"] == DEMO_SCRIPT and "hermes_tools" in DEMO_SCRIPT
            assert len(seen[2][1]["tasks"]) == 2
            final = history[-1]["content"]
            assert final.startswith(LABEL)
            assert "Linux box 6.1" in final and "both done" in final and "whoami" in final

    async def test_subagent_short_flow(self, pool, mode):
        async with serve_scripted_provider(rule_mode=True) as server:
            adapter = adapter_for(server, pool, mode)
            system = "You are a focused subagent working on a specific delegated task.\n\nYOUR TASK:\nCount files\n\nCONTEXT:\nnone"
            history = [{"role": "system", "content": system}, {"role": "user", "content": "Count files"}]
            events = await collect(adapter, request(history, tools=[TERMINAL_TOOL]))
            call = next(e for e in events if isinstance(e, ToolCallCompleted))
            assert call.name == "terminal"
            history += [message_to_dict(events[-1].message), {"role": "tool", "tool_call_id": call.call_id, "content": "42"}]
            events = await collect(adapter, request(history, tools=[TERMINAL_TOOL]))
            text = message_to_dict(events[-1].message)["content"]
            assert "Count files" in text and "42" in text and not events[-1].message.tool_calls


class TestDefaultStep:
    """An empty script answers with the configured default step, every time."""

    async def test_default(self, pool):
        async with serve_scripted_provider([{"text": "first"}], default={"text": "fallback"}) as server:
            adapter = adapter_for(server, pool, "anthropic_messages")
            answers = [message_to_dict((await collect(adapter, request()))[-1].message)["content"] for _ in range(3)]
            assert answers == ["first", "fallback", "fallback"]
            assert len(await server.wait_requests(3)) == 3


class TestRulesBadInput:
    """A conversation the rules cannot read gets a 400 and the server carries on."""

    async def test_malformed_messages(self):
        async with serve_scripted_provider(rule_mode=True) as server:
            async with httpx2.AsyncClient() as http:
                resp = await http.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": ["not a dict"]})
                assert resp.status_code == 400
                assert "could not read" in resp.json()["error"]["message"]
                ok = await http.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
                assert ok.status_code == 200
                assert ok.json()["choices"][0]["message"]["content"].startswith(LABEL)


class TestCli:
    """python -m providers.scripted prints its URL and serves a script file."""

    async def test_cli(self, tmp_path, pool):
        script = tmp_path / "script.json"
        script.write_text(json.dumps([{"text": "from the file"}]))
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "providers.scripted", "--port", "0", "--script", str(script)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        try:
            with trio.fail_after(10):
                line = b""
                while not line.endswith(b"\n"):
                    chunk = await proc.stdout.receive_some(1)
                    assert chunk, "CLI exited before printing its URL"
                    line += chunk
            url = line.decode().strip()
            assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
            settings = ProviderSettings(provider="scripted", model="m", base_url=url, api_mode="chat_completions", api_key="k")
            events = await collect(make_adapter(settings, pool, StreamingConfig()), request())
            assert message_to_dict(events[-1].message)["content"] == "from the file"
        finally:
            proc.terminate()
            with trio.move_on_after(5):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await proc.stdout.aclose()

    def test_bad_script_file(self, tmp_path):
        script = tmp_path / "bad.json"
        script.write_text('{"bogus": 1}')
        done = subprocess.run([sys.executable, "-m", "providers.scripted", "--script", str(script)], capture_output=True, text=True, timeout=20)
        assert done.returncode == 2
        assert "unknown step key" in done.stderr
