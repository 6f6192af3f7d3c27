// A report reads source lines only from the recorded program's Python files:
// under its working directory or import paths, .py, regular once resolved.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "diagnose/diagnose.h"
#include "diagnose/line_diagnosis.h"
#include "test_util.h"

namespace magneton::diagnose {
namespace {

namespace fs = std::filesystem;

struct Layout {
  std::string project;  // the recorded cwd
  std::string lib;      // an import path
  std::string outside;  // neither
};

Layout MakeLayout() {
  Layout l;
  const fs::path root = fs::path(testing::TempPath("root"));
  l.project = (root / "project").string();
  l.lib = (root / "site-packages").string();
  l.outside = (root / "home").string();
  for (const std::string& d : {l.project, l.lib, l.outside}) fs::create_directories(d);
  std::ofstream(l.project + "/train.py") << "def main():\n    run()\n";
  std::ofstream(l.lib + "/lib.py") << "def f():\n    return 1\n";
  std::ofstream(l.outside + "/private.py") << "SECRET = 'x'\n";
  std::ofstream(l.outside + "/id_rsa") << "-----BEGIN OPENSSH PRIVATE KEY-----\n";
  std::ofstream(l.project + "/notes.txt") << "not python\n";
  fs::create_symlink(l.outside + "/id_rsa", l.project + "/key.py");  // named .py, is not
  fs::create_symlink(l.outside + "/private.py", l.project + "/linked.py");
  return l;
}

Trace TraceAt(const Layout& l, const std::string& sys_path_json) {
  Trace t;
  t.meta.cwd = l.project;
  if (!sys_path_json.empty()) t.meta.extra["python.sys_path"] = sys_path_json;
  return t;
}

TEST(SourceRoots, OnlyPythonFilesOfTheRecordedProgram) {
  const Layout l = MakeLayout();
  const SourceRoots roots = SourceRoots::Of(TraceAt(l, "[\"" + l.lib + "\", \"\", \"relative/missing\"]"));
  EXPECT_TRUE(roots.Check(l.project + "/train.py").ok());  // under the working directory
  EXPECT_TRUE(roots.Check(l.lib + "/lib.py").ok());        // under an import path
  EXPECT_TRUE(roots.Check(l.project + "/../project/train.py").ok());
  for (const std::string& refused :
       {l.outside + "/private.py", l.outside + "/id_rsa", l.project + "/notes.txt", l.project + "/key.py",
        l.project + "/linked.py", l.project + "/../home/private.py", std::string("/etc/passwd"),
        std::string("/etc/shadow"), l.project}) {
    EXPECT_FALSE(roots.Check(refused).ok()) << refused;
  }
}

TEST(SourceRoots, WithoutRecordedImportPathsOnlyTheWorkingDirectory) {
  const Layout l = MakeLayout();
  const SourceRoots roots = SourceRoots::Of(TraceAt(l, ""));
  EXPECT_TRUE(roots.Check(l.project + "/train.py").ok());
  EXPECT_FALSE(roots.Check(l.lib + "/lib.py").ok());
  EXPECT_FALSE(SourceRoots::Of(TraceAt(l, "not json")).Check(l.lib + "/lib.py").ok());
  // Two traces: either program's roots.
  Trace other;
  other.meta.cwd = l.lib;
  EXPECT_TRUE(SourceRoots::Of(TraceAt(l, ""), other).Check(l.lib + "/lib.py").ok());
}

TEST(SourceRoots, SnippetsAndFunctionsAreReadThroughThem) {
  const Layout l = MakeLayout();
  const SourceRoots roots = SourceRoots::Of(TraceAt(l, ""));
  SourceSnippet snippet;
  EXPECT_TRUE(ReadSourceWindow(roots, l.project + "/train.py", 2, 1, 1, &snippet));
  EXPECT_EQ(snippet.lines.front(), "def main():");
  EXPECT_FALSE(ReadSourceWindow(roots, l.project + "/key.py", 1, 1, 1, &snippet));
  EXPECT_FALSE(ReadSourceWindow(roots, "/etc/passwd", 1, 1, 1, &snippet));
  EXPECT_TRUE(ReadPyFunction(roots, l.project + "/train.py", 2, "main").ok());
  auto refused = ReadPyFunction(roots, l.outside + "/private.py", 1, "f");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("outside the folders reports read source from"), std::string::npos);
}

// Issue 33: a trace that says its working directory or import path is `/` (or
// the home directory) does not make every file under it readable.
TEST(SourceRoots, TheRootAndHomeAreNeverRoots) {
  const Layout l = MakeLayout();
  Trace t;
  t.meta.cwd = "/";
  t.meta.extra["python.sys_path"] = "[\"/\", \"/.\"]";
  const std::string home = l.outside;
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home ? old_home : "";
  setenv("HOME", home.c_str(), 1);
  Trace at_home;
  at_home.meta.cwd = home;
  for (const SourceRoots& roots : {SourceRoots::Of(t), SourceRoots::Of(at_home)}) {
    EXPECT_FALSE(roots.Check(l.outside + "/private.py").ok());
    EXPECT_FALSE(roots.Check(l.project + "/train.py").ok());
  }
  SourceRoots explicit_roots;
  const Status root = explicit_roots.AddExplicit("/");
  EXPECT_EQ(root.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(root.message().find("too wide"), std::string::npos) << root.message();
  EXPECT_NE(explicit_roots.AddExplicit(home + "/.").message().find("home directory"), std::string::npos);
  EXPECT_FALSE(explicit_roots.AddExplicit(l.project + "/train.py").ok());  // not a directory
  EXPECT_TRUE(explicit_roots.AddExplicit(l.project).ok());
  EXPECT_EQ(explicit_roots.dirs().size(), 1u);
  if (old_home) setenv("HOME", saved_home.c_str(), 1);
}

TEST(SourceRoots, TheFilesLetThroughAreListed) {
  const Layout l = MakeLayout();
  SourceRoots roots;
  roots.Add(l.project);
  const SourceRoots copy = roots;  // copies share the list (a report's roots are passed by value)
  SourceSnippet snippet;
  EXPECT_TRUE(ReadSourceWindow(copy, l.project + "/train.py", 2, 1, 1, &snippet));
  EXPECT_FALSE(ReadSourceWindow(copy, l.outside + "/private.py", 1, 1, 1, &snippet));
  const std::vector<std::string> want = {fs::canonical(l.project + "/train.py").string()};
  EXPECT_EQ(roots.files_read(), want);
}

}  // namespace
}  // namespace magneton::diagnose
