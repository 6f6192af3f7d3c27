# Eval stage tests: scoring on synthetic diff results.
magneton_test(eval_score_unittest)
magneton_test(eval_env_unittest)
magneton_test(eval_spread_unittest)
