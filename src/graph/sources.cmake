# Graph stage: the dataflow DAG of a trace and its dominator trees.
set(MAGNETON_GRAPH_SOURCES
  graph/dataflow_graph.cc
  graph/tensor_origin.cc
  graph/main_flow.cc
  graph/dominators.cc
)
