module @a_inference_bincount_3038__.1 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main() -> (tensor<6xi32>, tensor<6xi32>) {
    %c = stablehlo.constant dense<[1, 3, 0, 2, 0, 1]> : tensor<6xi32> loc(#loc1)
    %0 = stablehlo.reshape %c : (tensor<6xi32>) -> tensor<6xi32> loc(#loc2)
    %c_0 = stablehlo.constant dense<[1, 3, 0, 2, 0, 1]> : tensor<6xi32> loc(#loc3)
    %1 = stablehlo.reshape %c_0 : (tensor<6xi32>) -> tensor<6xi32> loc(#loc2)
    return %0, %1 : tensor<6xi32>, tensor<6xi32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("constant.2")
#loc2 = loc("XLA_Retvals")
#loc3 = loc("constant.3")
