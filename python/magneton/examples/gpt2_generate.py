"""A tiny random-init GPT-2 `generate()`, as a user would write it (no
magneton imports): the default workload of `magneton demo`."""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def build_model(n_layer: int = 2, n_embd: int = 64, n_head: int = 4, seed: int = 0):
    torch.manual_seed(seed)
    config = GPT2Config(n_layer=n_layer, n_embd=n_embd, n_head=n_head, vocab_size=1000, n_positions=256,
                        bos_token_id=999, eos_token_id=999)
    return GPT2LMHeadModel(config).eval()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--embd", type=int, default=64, help="hidden size (n_embd)")
    parser.add_argument("--prompt-tokens", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--no-cache", action="store_true", help="generate with use_cache=False")
    parser.add_argument("--copy-to", metavar="PATH",
                        help="write this script to PATH and exit (`magneton demo` runs the copy, as a user's script)")
    args = parser.parse_args(argv)
    if args.copy_to:
        import shutil

        shutil.copyfile(__file__, args.copy_to)
        return

    model = build_model(n_layer=args.layers, n_embd=args.embd)
    torch.set_num_threads(1)  # steadier per-op timing (and energy estimate) on small CPUs
    input_ids = torch.randint(0, model.config.vocab_size, (1, args.prompt_tokens),
                              generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = model.generate(input_ids, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                             do_sample=False, use_cache=not args.no_cache, pad_token_id=0)
    print("generated:", out[0, args.prompt_tokens:].tolist())


if __name__ == "__main__":
    main()
