# Device activity: Kineto trace ingestion (hand-written fixtures of the
# documented format, tests/data/kineto/), the clock mapping and the link to
# ops, and the record-stage ingest driven by a scripted activity source.
magneton_test(gpu_kineto_unittest)
target_compile_definitions(gpu_kineto_unittest PRIVATE MAGNETON_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data")
magneton_test(gpu_ingest_unittest)
target_compile_definitions(gpu_ingest_unittest PRIVATE MAGNETON_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data")
# CUDA graphs: capture, replays and their kernels (tests/data/kineto/cuda_graph.json).
magneton_test(gpu_graph_unittest)
target_compile_definitions(gpu_graph_unittest PRIVATE MAGNETON_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data")
