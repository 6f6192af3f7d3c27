# Analysis session tests: the pipeline with a scripted process runner.
magneton_test(analysis_session_unittest)
target_compile_definitions(analysis_session_unittest PRIVATE MAGNETON_GOLDEN_DIR="${PROJECT_SOURCE_DIR}/tests/golden")
magneton_test(analysis_ab_unittest)
# Which finding the line-level step explains.
magneton_test(analysis_line_target_unittest)
# export --perfetto-diff: the diff through the session, then the trace-event writer.
magneton_test(perfetto_diff_unittest)
# The GPU path end to end on fakes: recorded traces with replayed kernel streams, through the session.
magneton_test(gpu_diff_unittest)
