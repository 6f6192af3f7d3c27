# The layout conversion needs no ggml; the node adapter needs the ggml.h the
# hook was built against (found by src/ggml_hook/CMakeLists.txt).
magneton_test(ggml_layout_unittest)
target_sources(ggml_layout_unittest PRIVATE ${PROJECT_SOURCE_DIR}/src/ggml_hook/ggml_layout.cc)
if(MAGNETON_GGML_INCLUDE_FOUND AND TARGET magneton_ggml)
  magneton_test(ggml_node_unittest)
  target_sources(ggml_node_unittest PRIVATE ${PROJECT_SOURCE_DIR}/src/ggml_hook/ggml_node.cc
                 ${PROJECT_SOURCE_DIR}/src/ggml_hook/ggml_layout.cc)
  target_include_directories(ggml_node_unittest SYSTEM PRIVATE ${MAGNETON_GGML_INCLUDE_FOUND})
endif()
