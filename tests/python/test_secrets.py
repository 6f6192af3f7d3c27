"""No secrets in a trace: a real torch recording with secret-looking
environment variables, command-line assignments and flags, call arguments and
a model config field. Their values must appear nowhere in the trace's bytes
(the -wal included, copied from inside the recording while it is open), nor in
`magneton show` or `magneton export --chrome`; the names are there, as
`<redacted>`."""

import os
import sys
import textwrap
import uuid

from conftest import TraceDB, fast_path_script, require, run_cli

require("torch")
require("transformers")

SCRIPT = textwrap.dedent("""
    import os
    import shutil
    import sys

    import torch
    import transformers

    from magneton import _core, config_snapshot

    trace, snapshot = sys.argv[1], sys.argv[2]
    # A from_pretrained-like call, through the snapshot's call-argument path;
    # the nested dict's key is judged by the same rule.
    config_snapshot.record_call_args("from_pretrained", {
        "token": os.environ["KWARG_SECRET"], "revision": "main",
        "hub_kwargs": {"api_key": os.environ["NESTED_SECRET"], "local_files_only": True}})


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.config = transformers.PretrainedConfig(api_key=os.environ["MODEL_SECRET"], hidden=8)
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            return self.lin(x).relu()


    net = Net()
    with torch.no_grad():
        for _ in range(3):
            y = net(torch.randn(4, 8))
    # While recording: the committed pages sit in the -wal file.
    _core.flush()
    os.makedirs(snapshot)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(trace + suffix):
            shutil.copy(trace + suffix, os.path.join(snapshot, "trace" + suffix))
    print(float(y.sum()))
""")


def _secret(kind):
    return f"{kind}-{uuid.uuid4().hex}"


def test_secret_values_never_reach_the_trace(tmp_path):
    script = tmp_path / "secrets_script.py"
    script.write_text(SCRIPT)
    trace = str(tmp_path / "run.mtrace")
    snapshot = str(tmp_path / "open-snapshot")
    env_secrets = {  # recorded by prefix (HF_, CUDA_, PYTORCH_, TRANSFORMERS_), so they would be stored
        "HF_TOKEN": _secret("hf"),
        "CUDA_API_KEY": _secret("cuda-key"),
        "PYTORCH_DB_PASSWORD": _secret("pw"),
        "TRANSFORMERS_AUTH": _secret("auth"),
        "HF_HUB_CLIENT_SECRET": _secret("client-secret"),
    }
    other_secrets = {"KWARG_SECRET": _secret("kwarg"), "NESTED_SECRET": _secret("nested"),
                     "MODEL_SECRET": _secret("model")}
    cmdline_password, cmdline_flag = _secret("cmd-pw"), _secret("cmd-flag")
    env = {**env_secrets, **other_secrets, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    r = run_cli("record", "-o", trace, "--", "env", f"MY_DB_PASSWORD={cmdline_password}", sys.executable,
                str(script), trace, snapshot, "--api-key", cmdline_flag, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    secrets = [*env_secrets.values(), *other_secrets.values(), cmdline_password, cmdline_flag]

    # Bytes: the finished file, and the file and -wal as they were mid-recording.
    snap_files = sorted(os.listdir(snapshot))
    assert "trace-wal" in snap_files and os.path.getsize(os.path.join(snapshot, "trace-wal")) > 0, snap_files
    blobs = {name: open(os.path.join(snapshot, name), "rb").read() for name in snap_files}
    blobs["final"] = open(trace, "rb").read()
    assert not os.path.exists(trace + "-wal")
    for name, data in blobs.items():
        for s in secrets:
            assert s.encode() not in data, f"{s} found in {name}"
    # The scan sees what was written: the non-secret control is in the open WAL and in the final file.
    assert b"env.OMP_NUM_THREADS" in blobs["trace-wal"] + blobs["trace"] and b"env.OMP_NUM_THREADS" in blobs["final"]

    # The names are kept, their values are not.
    db = TraceDB(trace)
    config = db.config()
    for name in env_secrets:
        # Read: redacted by name; set and matched by prefix only: stored by name only.
        assert config["env." + name] in ("<redacted>", "<set, not read>"), name
    assert config["env.OMP_NUM_THREADS"] == "1"
    assert config["call.from_pretrained.token"] == "<redacted>"
    assert config["call.from_pretrained.revision"] == "'main'"
    nested = config["call.from_pretrained.hub_kwargs"]
    assert "'api_key': '<redacted>'" in nested and "'local_files_only': True" in nested, nested
    assert config["model_config.Net.api_key"] == "<redacted>"
    assert config["model_config.Net.hidden"] == "8"
    command = db.query("SELECT value FROM meta WHERE key = 'command_line'")[0][0]
    assert "MY_DB_PASSWORD='<redacted>'" in command and "--api-key '<redacted>'" in command, command
    assert command.endswith(f"{script} {trace} {snapshot} --api-key '<redacted>'"), command

    # Nor in what magneton prints or exports from it.
    show = run_cli("show", trace)
    assert show.returncode == 0, show.stderr
    chrome_path = tmp_path / "run.json"
    export = run_cli("export", "--chrome", trace, "-o", str(chrome_path))
    assert export.returncode == 0, export.stderr
    chrome = chrome_path.read_text()
    for text in (show.stdout + show.stderr, chrome):
        for s in secrets:
            assert s not in text
    assert "env.HF_TOKEN" in show.stdout and "<redacted>" in show.stdout, show.stdout
    assert "MY_DB_PASSWORD='<redacted>'" in chrome


def test_secret_rule_is_the_core_one():
    """Python asks the C++ rule (no copy of it in Python)."""
    from magneton import _core

    assert _core.REDACTED == "<redacted>"
    assert _core.is_secret_name("env.HF_TOKEN") and _core.is_secret_name("call.from_pretrained.token")
    assert not _core.is_secret_name("call.generate.max_new_tokens")
    assert not _core.is_secret_name("model_config.GPT2LMHeadModel.pad_token_id")


# The slow/fast-path script (a real waste finding, its deviation point inside
# work(), so the report shows work()'s lines), reading the secrets it is given.
COMMON_SCRIPT = fast_path_script("COMMON_FAST").replace(
    "import torch\n",
    "import sys\nimport torch\n\n# The program reads them, so the trace stores them (redacted).\n"
    "read = [os.environ[name] for name in sys.argv[1].split(\",\")]\n", 1).replace(
    "def work(x, w):\n",
    "def work(x, w):\n    SOURCE_TOKEN = \"SOURCE_TOKEN_VALUE\"  # a secret in the source, shown in the report\n", 1)



def test_common_secrets_are_redacted_by_name_and_by_shape(tmp_path):
    """Issue 33's list: secrets under names the old rule missed, credentials in
    URLs, and token-shaped values on the command line, in a real recording and
    in the diff report of two such recordings."""
    script = tmp_path / "common_secrets.py"
    source_token = "ghp_" + uuid.uuid4().hex
    script.write_text(COMMON_SCRIPT.replace("SOURCE_TOKEN_VALUE", source_token))
    secrets, traces, envs = [source_token], [], []
    for label in ("a", "b"):  # different secrets per side: the diff's config contrast shows their (redacted) values
        hexes = {k: uuid.uuid4().hex for k in ("db", "mysql", "pat", "jwt", "dsn", "url", "proxy", "redis", "hf",
                                               "cli", "p", "curl", "tok")}
        aws = "AKIA" + uuid.uuid4().hex[:16].upper()
        env = {
            "DB_PASS": hexes["db"], "MYSQL_PWD": hexes["mysql"], "GITHUB_PAT": "ghp_" + hexes["pat"],
            "CI_JOB_JWT": "eyJhbGciOiJSUzI1NiJ9." + hexes["jwt"] + ".sig" + hexes["jwt"][:12],
            "AWS_ACCESS_KEY_ID": aws, "SENTRY_DSN": "https://" + hexes["dsn"] + "@o1.ingest.example.io/1",
            "DATABASE_URL": f"postgres://app:{hexes['url']}@db.internal:5432/app",
            "HTTP_PROXY": f"http://me:{hexes['proxy']}@proxy.internal:3128",
            "REDIS_URL": f"redis://:{hexes['redis']}@cache.internal:6379/0",
            "HF_ENDPOINT": f"https://user:{hexes['hf']}@hub.internal",
            "OMP_NUM_THREADS": "1",
        }
        argv_secrets = ["--db-pass", hexes["cli"], "-p", "pw" + hexes["p"], f"https://u:{hexes['curl']}@host/x",
                        "sk-live-" + hexes["tok"]]
        secrets += [*hexes.values(), aws]
        trace = str(tmp_path / f"{label}.mtrace")
        r = run_cli("record", "--values", "-o", trace, "--", sys.executable, str(script), ",".join(env),
                    *argv_secrets, env={**env, "HF_HUB_OFFLINE": "1", "COMMON_FAST": "0" if label == "a" else "1"})
        assert r.returncode == 0, r.stdout + r.stderr
        traces.append(trace)
        envs.append(env)
    for trace in traces:
        data = open(trace, "rb").read()
        for s in secrets:
            assert s.encode() not in data, f"{s} found in {trace}"

    config = TraceDB(traces[0]).config()
    for name in ("DB_PASS", "MYSQL_PWD", "GITHUB_PAT", "CI_JOB_JWT", "AWS_ACCESS_KEY_ID", "SENTRY_DSN"):
        assert config["env." + name] == "<redacted>", (name, config["env." + name])
    assert config["env.DATABASE_URL"] == "postgres://<redacted>@db.internal:5432/app"
    assert config["env.HTTP_PROXY"] == "http://<redacted>@proxy.internal:3128"
    assert config["env.REDIS_URL"] == "redis://<redacted>@cache.internal:6379/0"
    assert config["env.HF_ENDPOINT"] == "https://<redacted>@hub.internal"
    assert config["env.OMP_NUM_THREADS"] == "1"  # the positive twin: an ordinary value stays
    assert envs[0]["DATABASE_URL"] != envs[1]["DATABASE_URL"]
    command = TraceDB(traces[0]).query("SELECT value FROM meta WHERE key = 'command_line'")[0][0]
    assert "--db-pass '<redacted>' -p '<redacted>' 'https://<redacted>@host/x' '<redacted>'" in command, command

    # Nor in the reports of a diff of the two.
    json_path, html_path = tmp_path / "d.json", tmp_path / "d.html"
    r = run_cli("diff", *traces, "--no-rerun", "-v", "--json", str(json_path), "--html", str(html_path),
                cwd=str(tmp_path))  # reports read source under the folder diff runs in
    assert r.returncode == 0, r.stdout + r.stderr
    for text in (r.stdout + r.stderr, json_path.read_text(), html_path.read_text()):
        for s in secrets:
            assert s not in text
    # The report did show that source line, with the token replaced.
    assert 'SOURCE_TOKEN = \\"<redacted>\\"' in json_path.read_text()
