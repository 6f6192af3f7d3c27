// No secrets in a trace: the naming rule, command-line redaction, and the
// writer applying both to everything recorded (Recorder and C ABI alike).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "magneton/c_api.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "test_util.h"
#include "trace/redact.h"

namespace magneton {
namespace {

TEST(IsSecretName, NamesThatLookSecret) {
  for (const char* name :
       {"HF_TOKEN", "env.HF_TOKEN", "hf_token", "CUDA_API_KEY", "env.CUDA_API_KEY", "MY_DB_PASSWORD", "DB_PASSWD",
        "call.from_pretrained.token", "model_config.GPT2LMHeadModel.api_key", "apiKey", "APIKey", "OPENAI_API_KEYS",
        "AWS_SECRET_ACCESS_KEY", "client_secret", "use_auth_token", "HF_AUTH", "GITHUB_TOKEN", "authToken",
        "GOOGLE_APPLICATION_CREDENTIALS", "credential", "http.Authorization", "--db-password", "--token",
        "--hf-token", "ssh_passphrase", "private_key", "OAUTH", "x.y.SessionToken"}) {
    EXPECT_TRUE(IsSecretName(name)) << name;
  }
}

TEST(IsSecretName, NamesThatDoNot) {
  // Token ids, token counts and attention keys are what diagnosis compares.
  for (const char* name :
       {"", "OMP_NUM_THREADS", "env.HF_HUB_OFFLINE", "call.generate.max_new_tokens", "max_tokens",
        "model_config.M.pad_token_id", "model_config.M.bos_token_id", "token_type_ids", "num_key_value_heads",
        "model_config.M.tokenizer_class", "TOKENIZERS_PARALLELISM", "author", "keyboard", "PWD", "PATH",
        "jax.config.jax_compiler_enable_remat_pass", "key_dim", "torch.backends.cudnn.benchmark",
        "token.count", "env.KMP_AFFINITY"}) {
    EXPECT_FALSE(IsSecretName(name)) << name;
  }
}

TEST(IsSecretName, JudgesTheLastComponent) {
  EXPECT_FALSE(IsSecretName("token.generate.max_new_tokens"));
  EXPECT_TRUE(IsSecretName("model.config.token"));
  EXPECT_EQ(RedactIfSecret("env.HF_TOKEN", "hf_abc"), "<redacted>");
  EXPECT_EQ(RedactIfSecret("env.OMP_NUM_THREADS", "4"), "4");
  EXPECT_EQ(RedactIfSecret("call.generate.token_healing", "True"), "True");  // a truth value is no secret
  EXPECT_EQ(RedactIfSecret("call.from_pretrained.token", "False"), "False");
  EXPECT_EQ(RedactIfSecret("call.from_pretrained.token", "Truely-secret"), "<redacted>");
  EXPECT_EQ(RedactIfSecret("env.MY_PIN_PASSWORD", "1234"), "<redacted>");
}

TEST(RedactCommandLine, AssignmentsAndFlagsOfSecretNames) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"env HF_TOKEN=hf_abc python a.py", "env HF_TOKEN='<redacted>' python a.py"},
      {"HF_TOKEN=hf_abc CUDA_API_KEY=k1 python a.py", "HF_TOKEN='<redacted>' CUDA_API_KEY='<redacted>' python a.py"},
      {"env 'MY_DB_PASSWORD=p w' python a.py", "env MY_DB_PASSWORD='<redacted>' python a.py"},
      {"MY_DB_PASSWORD=\"p \\\" w\";python a.py", "MY_DB_PASSWORD='<redacted>';python a.py"},
      {"HF_TOKEN=$(cat ~/.tok) python a.py", "HF_TOKEN='<redacted>' python a.py"},
      {"python a.py --token hf_abc --max-new-tokens 20", "python a.py --token '<redacted>' --max-new-tokens 20"},
      {"python a.py --api-key=sk-1 -v", "python a.py --api-key='<redacted>' -v"},
      {"python a.py '--token' 'x'\"'\"'y' out.txt", "python a.py '--token' '<redacted>' out.txt"},
      {"python a.py --token", "python a.py --token"},                 // nothing after it
      {"python a.py --token --fast", "python a.py --token --fast"},   // a flag, not a value
      {"env OMP_NUM_THREADS=2 python a.py --max-new-tokens=3", "env OMP_NUM_THREADS=2 python a.py --max-new-tokens=3"},
      {"echo 'HF_TOKEN is unset'", "echo 'HF_TOKEN is unset'"},
      {"", ""},
  };
  for (const auto& [line, want] : cases) {
    const std::string got = RedactCommandLine(line);
    EXPECT_EQ(got, want) << line;
    EXPECT_EQ(RedactCommandLine(got), got) << "not idempotent: " << line;
  }
}

TEST(IsSecretName, CommonSecretsIssue33) {
  for (const char* name : {"DB_PASS", "MYSQL_PWD", "GITHUB_PAT", "CI_JOB_JWT", "AWS_ACCESS_KEY_ID", "SENTRY_DSN",
                           "SESSION_COOKIE", "flask.session", "--db-pass", "PRIVATE", "aws_access_token", "SMTP_PASS",
                           "REDIS_PASSWD"}) {
    EXPECT_TRUE(IsSecretName(name)) << name;
  }
  for (const char* name : {"PWD", "OLDPWD", "jax.config.jax_compiler_enable_remat_pass", "num_passes", "session_id",
                           "env.DATABASE_URL", "HF_ENDPOINT", "path", "patience"}) {
    EXPECT_FALSE(IsSecretName(name)) << name;
  }
}

TEST(RedactSecretsInText, UrlCredentials) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"postgres://app:pw@db.internal:5432/app", "postgres://<redacted>@db.internal:5432/app"},
      {"http://user:s3cret@proxy:3128", "http://<redacted>@proxy:3128"},
      {"redis://:pw@cache:6379/0", "redis://<redacted>@cache:6379/0"},
      {"https://user:tok@hub.example.org/api", "https://<redacted>@hub.example.org/api"},
      {"clone https://u:p@h/r.git and https://h2/x", "clone https://<redacted>@h/r.git and https://h2/x"},
      {"https://huggingface.co/gpt2", "https://huggingface.co/gpt2"},
      {"user@example.org", "user@example.org"},
      {"https://example.org/a@b", "https://example.org/a@b"},  // '@' in the path, not the authority
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(RedactSecretsInText(in), want) << in;
    EXPECT_EQ(RedactSecretsInText(want), want) << "not idempotent: " << in;
  }
}

TEST(RedactSecretsInText, TokenShapedWords) {
  const std::vector<std::string> secrets = {
      "sk-live-4f9a8b7c6d5e4f3a2b1c",
      "sk_live_51HqLyjWDarjtT1zdp7dc",
      "ghp_1234567890abcdefghijABCDEFGHIJklmnop",
      "gho_16C7e42F292c6912E7710c838347Ae178B4a",
      "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
      "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
      "AKIAIOSFODNN7EXAMPLE",
      "xoxb-123456789012-abcdefghijkl",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
      "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL",  // 44 base64 characters
  };
  for (const std::string& s : secrets) {
    EXPECT_EQ(RedactSecretsInText(s), "<redacted>") << s;
    EXPECT_EQ(RedactSecretsInText("--key=" + s), "--key=<redacted>") << s;
    EXPECT_EQ(RedactSecretsInText("token is " + s + "."), "token is <redacted>.") << s;
  }
  // Identifiers, paths, hex digests and numbers stay.
  for (const char* keep :
       {"hf_hub_disable_telemetry", "sk-learn", "torch.backends.mkldnn.enabled",
        "/usr/lib/python3/dist-packages/transformers/models/gpt2/modeling_gpt2.py",
        "0123456789abcdef0123456789abcdef01234567", "hmac-sha256:v1:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "TorchDynamoCompiledRegionForwardAndBackward", "3.14159265358979323846264338327950288",
        "GPT2LMHeadModel/GPT2Model/ModuleList/GPT2Block/GPT2Attention", "aten::scaled_dot_product_attention",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="}) {
    EXPECT_EQ(RedactSecretsInText(keep), keep) << keep;
  }
}

TEST(RedactIfSecret, ValuesOfAnyNameLoseTheirSecrets) {
  EXPECT_EQ(RedactIfSecret("env.DATABASE_URL", "postgres://app:pw@db/app"), "postgres://<redacted>@db/app");
  EXPECT_EQ(RedactIfSecret("env.HTTP_PROXY", "http://u:p@proxy:3128"), "http://<redacted>@proxy:3128");
  EXPECT_EQ(RedactIfSecret("env.SOME_SETTING", "ghp_1234567890abcdefghijABCDEFGHIJklmnop"), "<redacted>");
  EXPECT_EQ(RedactIfSecret("env.DB_PASS", "hunter2"), "<redacted>");
  EXPECT_EQ(RedactIfSecret("env.OMP_NUM_THREADS", "4"), "4");
}

TEST(RedactCommandLine, SecretsIssue33) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"python a.py --db-pass X", "python a.py --db-pass '<redacted>'"},
      {"mysql -p hunter2 -h db", "mysql -p '<redacted>' -h db"},
      {"python serve.py -p 8080", "python serve.py -p 8080"},
      {"git clone https://user:pw@host/r.git", "git clone 'https://<redacted>@host/r.git'"},
      {"python a.py sk-live-4f9a8b7c6d5e4f3a2b1c", "python a.py '<redacted>'"},
      {"env DATABASE_URL=postgres://app:pw@db/app python a.py", "env 'DATABASE_URL=postgres://<redacted>@db/app' python a.py"},
  };
  for (const auto& [line, want] : cases) {
    const std::string got = RedactCommandLine(line);
    EXPECT_EQ(got, want) << line;
    EXPECT_EQ(RedactCommandLine(got), got) << "not idempotent: " << line;
  }
}

TEST(RedactArgv, WordByWord) {
  const std::vector<std::string> argv = {"env",          "HF_TOKEN=hf_abc", "DATABASE_URL=postgres://a:b@db/x",
                                         "python3",      "s.py",            "--api-key",
                                         "abc123",       "--db-pass=pw",    "-p",
                                         "hunter2",      "-p",              "8080",
                                         "sk-live-4f9a8b7c6d5e4f3a2b1c", "--max-new-tokens", "20"};
  const std::vector<std::string> want = {"env",          "HF_TOKEN=<redacted>", "DATABASE_URL=postgres://<redacted>@db/x",
                                         "python3",      "s.py",                "--api-key",
                                         "<redacted>",   "--db-pass=<redacted>", "-p",
                                         "<redacted>",   "-p",                  "8080",
                                         "<redacted>",   "--max-new-tokens",    "20"};
  EXPECT_EQ(RedactArgv(argv), want);
  EXPECT_EQ(RedactArgv(want), want);  // idempotent
  EXPECT_TRUE(HoldsRedaction("--api-key <redacted>"));
  EXPECT_FALSE(HoldsRedaction("python3 s.py"));
}

// Every byte of the trace (and its -wal/-shm while open).
std::string FileBytes(const std::string& path) {
  std::vector<char> b = testing::ReadBytes(path);
  return std::string(b.begin(), b.end());
}

TEST(TraceWriterRedaction, NoSecretReachesTheFile) {
  const std::string path = testing::TempPath("secret.mtrace");
  RunMetadata meta;
  meta.label = "secret";
  meta.command_line = "env HF_TOKEN=tok-cmdline-7f3a python a.py --api-key sk-cmdline-19c2";
  RecorderOptions options;
  options.sample_energy = false;
  ASSERT_TRUE(Recorder::Start(path, meta, options).ok());
  Recorder* rec = Recorder::Active();
  rec->SetConfig("env.HF_TOKEN", "tok-env-55d1", "env");
  rec->SetConfig("call.from_pretrained.token", "tok-kwarg-0b7e", "call_arg");
  rec->SetConfig("model_config.M.api_key", "sk-model-a4c9", "model_config");
  rec->SetConfig("env.OMP_NUM_THREADS", "3", "env");
  rec->SetMeta("ort.session.0.auth_token", "tok-meta-e2f0");
  rec->SetMeta("command_line", "python b.py --token tok-setmeta-3d11");
  magneton_set_config("env.CUDA_API_KEY", "sk-capi-81bb", "env");
  ASSERT_TRUE(rec->Flush().ok());
  const std::vector<std::string> secrets = {"tok-cmdline-7f3a", "sk-cmdline-19c2", "tok-env-55d1", "tok-kwarg-0b7e",
                                            "sk-model-a4c9",    "tok-meta-e2f0",   "tok-setmeta-3d11", "sk-capi-81bb"};
  const std::string open_bytes = FileBytes(path) + FileBytes(path + "-wal");
  ASSERT_NE(open_bytes.find("OMP_NUM_THREADS"), std::string::npos);  // the scan sees what was written
  for (const std::string& s : secrets) EXPECT_EQ(open_bytes.find(s), std::string::npos) << s << " (while open)";
  ASSERT_TRUE(Recorder::Stop().ok());
  const std::string closed = FileBytes(path);
  for (const std::string& s : secrets) EXPECT_EQ(closed.find(s), std::string::npos) << s;

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  auto value = [&](const std::string& key) {
    for (const ConfigEntry& c : trace->config) {
      if (c.key == key) return c.value;
    }
    return std::string("<missing>");
  };
  EXPECT_EQ(value("env.HF_TOKEN"), "<redacted>");
  EXPECT_EQ(value("env.CUDA_API_KEY"), "<redacted>");
  EXPECT_EQ(value("call.from_pretrained.token"), "<redacted>");
  EXPECT_EQ(value("model_config.M.api_key"), "<redacted>");
  EXPECT_EQ(value("env.OMP_NUM_THREADS"), "3");
  EXPECT_EQ(trace->meta.command_line, "python b.py --token '<redacted>'");
  EXPECT_EQ(trace->meta.extra.at("ort.session.0.auth_token"), "<redacted>");
}

}  // namespace
}  // namespace magneton
