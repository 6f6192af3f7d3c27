# Replay stage tests: the loop, target and online comparison with a scripted
# clock, device and counter (no torch, no GPU).
magneton_test(replay_unittest)
# Which op names replay calls (issue 33: a trace is data).
magneton_test(replay_policy_unittest)
