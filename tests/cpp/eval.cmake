# Eval stage tests: scoring on synthetic diff results.
magneton_test(eval_score_unittest)
