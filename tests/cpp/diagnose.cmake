# Diagnose stage and diff report tests.
magneton_test(diagnose_unittest)
magneton_test(diagnose_shapes_unittest)
magneton_test(report_diff_unittest)
target_compile_definitions(report_diff_unittest PRIVATE MAGNETON_GOLDEN_DIR="${PROJECT_SOURCE_DIR}/tests/golden")
magneton_test(line_diagnosis_unittest)
magneton_test(diagnose_source_roots_unittest)
magneton_test(diagnose_counterfactual_unittest)
