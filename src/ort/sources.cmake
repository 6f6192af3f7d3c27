# ONNX Runtime ingestion (include/magneton/ort.h): profile JSON, graph JSON,
# clock mapping, graph -> ops/tensors/edges.
set(MAGNETON_ORT_SOURCES
  ort/profile.cc
  ort/graph_json.cc
  ort/clock.cc
  ort/ingest.cc
)
