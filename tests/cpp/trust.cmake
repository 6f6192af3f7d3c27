# Trust stage: trace signatures and the trust key.
magneton_test(trust_unittest)
