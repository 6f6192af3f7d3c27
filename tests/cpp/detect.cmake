# Detect stage tests: classification, aggregation, special regions.
magneton_test(detect_classify_unittest)
magneton_test(detect_regions_unittest)
magneton_test(detect_same_work_unittest)
magneton_test(detect_uncertainty_unittest)
