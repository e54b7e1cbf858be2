"""One secret-name rule for every tool process; the daemon's own variables never pass."""

from __future__ import annotations

import pytest

from tools.jail import allowed_environment, is_secret_name, terminal_environment
from tools.jail._mounts import AGENT_SOCKET, jail_env
from tools.jail.environment import is_terminal_secret
from tools.jail.policy import JailPolicy, SandboxMode

USER_ENV = {
    "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "PWD": "/home/u/p", "OLDPWD": "/home/u",
    "SHLVL": "2", "SSH_AUTH_SOCK": "/run/agent.sock", "GIT_AUTHOR_NAME": "Ada", "TOKENIZERS_PARALLELISM": "false",
    "OPENAI_API_KEY": "sk-x", "GITHUB_TOKEN": "t", "DATABASE_URL": "postgres://u:p@h/db", "MYSQL_PWD": "p",
    "HERMES_ACTORS_HOME": "/home/u/.hermes-actors", "HERMES_ACTORS_SOCKET": "/run/c.sock", "MY_TOKEN": "mine",
    "EDITOR": "vi",
}  # fmt: skip


class TestSecretNames:
    """Markers and the blocklist mark secrets; known non-secrets that merely contain a marker pass."""

    @pytest.mark.parametrize(
        ("name", "secret"),
        [("OPENAI_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("bearer_x", True), ("OAUTH_CLIENT", True),
         ("DATABASE_URL", True), ("MYSQL_PWD", True), ("HERMES_ACTORS_HOME", True), ("MONKEY", True),
         ("SSH_AUTH_SOCK", False), ("GIT_AUTHOR_NAME", False), ("TOKENIZERS_PARALLELISM", False),
         ("PWD", False), ("OLDPWD", False), ("PATH", False), ("HOME", False)],
    )  # fmt: skip
    def test_rule(self, name: str, secret: bool) -> None:
        assert is_secret_name(name) is secret


class TestTerminalEnvironment:
    """The terminal gets the user's environment minus secrets and the daemon's variables, plus passthrough."""

    def test_filtered(self) -> None:
        env = terminal_environment(USER_ENV, passthrough=("MY_TOKEN", "HERMES_ACTORS_HOME", "ABSENT"))
        assert env == {
            "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "OLDPWD": "/home/u",
            "SSH_AUTH_SOCK": "/run/agent.sock", "GIT_AUTHOR_NAME": "Ada", "TOKENIZERS_PARALLELISM": "false",
            "MY_TOKEN": "mine", "EDITOR": "vi",
        }  # fmt: skip


class TestTerminalBlocklist:
    """The terminal drops Hermes's named provider, tool and gateway variables and keeps agent sockets."""

    DESKTOP = {
        "XAUTHORITY": "/run/user/1000/xauth", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
        "GPG_AGENT_INFO": "/run/user/1000/gnupg/S.gpg-agent", "SSH_AGENT_PID": "77", "ICEAUTHORITY": "/x/ice",
        "PASSWORD_STORE_DIR": "/home/u/.pass",
    }  # fmt: skip
    NAMED = {
        "OPENAI_BASE_URL": "https://proxy", "LLM_MODEL": "m", "TELEGRAM_HOME_CHANNEL": "42", "HASS_URL": "http://h",
        "EMAIL_ADDRESS": "a@b", "GITHUB_APP_ID": "9", "FIRECRAWL_API_URL": "https://fc",
    }  # fmt: skip

    def test_named_blocklist_and_allow_list(self) -> None:
        env = terminal_environment({**self.DESKTOP, **self.NAMED, "SOME_NEW_SERVICE_TOKEN": "t", "EDITOR": "vi"})
        assert env == {**self.DESKTOP, "EDITOR": "vi"}

    def test_passthrough_brings_a_named_one_back(self) -> None:
        env = terminal_environment(self.NAMED, passthrough=("OPENAI_BASE_URL",))
        assert env == {"OPENAI_BASE_URL": "https://proxy"}

    @pytest.mark.parametrize(
        "name", ["OPENAI_BASE_URL", "TELEGRAM_HOME_CHANNEL", "XAI_API_KEY", "HERMES_ACTORS_HOME"]
    )
    def test_terminal_rule(self, name: str) -> None:
        assert is_terminal_secret(name)

    @pytest.mark.parametrize("name", ["XAUTHORITY", "SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "EDITOR"])
    def test_terminal_keeps(self, name: str) -> None:
        assert not is_terminal_secret(name)

    def test_execute_code_unchanged(self) -> None:
        """The seeds' allow-list for execute_code lets none of these through."""
        assert allowed_environment({**self.DESKTOP, **self.NAMED, "PATH": "/usr/bin"}) == {"PATH": "/usr/bin"}


class TestExecuteCodeEnvironment:
    """execute_code keeps the seeds' allow-list only."""

    def test_allow_list(self) -> None:
        env = allowed_environment(USER_ENV, passthrough=("MY_TOKEN",))
        assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "PWD": "/home/u/p", "MY_TOKEN": "mine"}


class TestJailEnvironment:
    """In a jail TMPDIR is /tmp, and the agent socket is the bound one or none."""

    def _policy(self, agent: str | None) -> JailPolicy:
        return JailPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace="/w", tmp_dir="/t", ssh_agent_socket=agent)

    def test_tmp_and_no_agent(self) -> None:
        env, hide = jail_env({"TMPDIR": "/var/run/daemon", "TMP": "/x", "SSH_AUTH_SOCK": "/run/agent.sock"}, self._policy(None))
        assert env == {"TMPDIR": "/tmp", "TMP": "/tmp"}
        assert hide == ("/run/agent.sock",)

    def test_agent_chosen(self) -> None:
        env, hide = jail_env({"SSH_AUTH_SOCK": "/run/agent.sock"}, self._policy("/run/agent.sock"))
        assert env == {"TMPDIR": "/tmp", "SSH_AUTH_SOCK": AGENT_SOCKET} and hide == ()
