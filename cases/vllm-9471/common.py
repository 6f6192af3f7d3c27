"""Batched decode attention with FlashInfer's paged-KV decode wrapper, as vLLM's
FLASHINFER backend ran it for Llama-3.1-8B (32 query heads, 8 KV heads)."""
import sys

import torch

NUM_QO_HEADS, NUM_KV_HEADS, HEAD_DIM = 32, 8, 128  # GQA group size 4
BATCH, KV_LEN, PAGE_SIZE, STEPS = 64, 2048, 16, 200


def require_cuda_and_flashinfer():
    if not torch.cuda.is_available():
        print("needs a CUDA GPU: FlashInfer's decode kernels run only on NVIDIA GPUs", file=sys.stderr)
        sys.exit(77)
    try:
        import flashinfer
    except ImportError:
        print("needs flashinfer (pip install flashinfer-python): the case compares two FlashInfer decode kernels",
              file=sys.stderr)
        sys.exit(77)
    return flashinfer


def decode(use_tensor_cores):
    flashinfer = require_cuda_and_flashinfer()
    g = torch.Generator(device="cuda").manual_seed(0)
    pages_per_seq = KV_LEN // PAGE_SIZE
    total_pages = BATCH * pages_per_seq
    kv_cache = torch.randn(total_pages, 2, PAGE_SIZE, NUM_KV_HEADS, HEAD_DIM, dtype=torch.float16, device="cuda",
                           generator=g)
    kv_indptr = torch.arange(BATCH + 1, dtype=torch.int32, device="cuda") * pages_per_seq
    kv_indices = torch.arange(total_pages, dtype=torch.int32, device="cuda")
    kv_last_page_len = torch.full((BATCH,), PAGE_SIZE, dtype=torch.int32, device="cuda")
    workspace = torch.empty(128 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD", use_tensor_cores=use_tensor_cores)
    plan = getattr(wrapper, "plan", None) or wrapper.begin_forward  # begin_forward before FlashInfer 0.2
    try:
        plan(kv_indptr, kv_indices, kv_last_page_len, NUM_QO_HEADS, NUM_KV_HEADS, HEAD_DIM, PAGE_SIZE,
             q_data_type=torch.float16, kv_data_type=torch.float16)
    except TypeError:
        plan(kv_indptr, kv_indices, kv_last_page_len, NUM_QO_HEADS, NUM_KV_HEADS, HEAD_DIM, PAGE_SIZE,
             data_type=torch.float16)
    run = getattr(wrapper, "run", None) or wrapper.forward
    queries = torch.randn(STEPS, BATCH, NUM_QO_HEADS, HEAD_DIM, dtype=torch.float16, device="cuda", generator=g)
    total = torch.zeros((), dtype=torch.float32, device="cuda")
    for step in range(STEPS):  # one new query token per sequence and step
        out = run(queries[step], kv_cache)
        total += out.float().norm()
    print(f"{total.item():.5g}")
