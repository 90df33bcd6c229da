module @IrToHlo.665 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<48x16xf32> loc("model.embed_tokens.weight"), %arg1: tensor<16xf32> loc("model.norm.weight"), %arg2: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg3: tensor<16x32xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg4: tensor<32x16xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg5: tensor<16xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg6: tensor<16x16xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg7: tensor<8x16xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg8: tensor<16xf32> loc("model.layers.1.input_layernorm.weight"), %arg9: tensor<16x32xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg10: tensor<32x16xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg11: tensor<16xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg12: tensor<16x16xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg13: tensor<8x16xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg14: tensor<16xf32> loc("model.layers.0.input_layernorm.weight"), %arg15: tensor<f32> loc("model.embed_tokens.embed_scale"), %arg16: tensor<2xi64> loc("tokens"), %arg17: tensor<i64> loc("cache.0.cumulative_length"), %arg18: tensor<2x2x12x4xf32> loc("cache.0.values"), %arg19: tensor<f32> loc("lifted.float32[-inf]"), %arg20: tensor<f32> loc("lifted.float32[0.7071067690849304]"), %arg21: tensor<2xf32> loc("model.rotary_emb.inv_freq"), %arg22: tensor<8x16xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg23: tensor<2x2x12x4xf32> loc("cache.0.keys"), %arg24: tensor<16x16xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg25: tensor<32x16xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg26: tensor<i64> loc("cache.1.cumulative_length"), %arg27: tensor<2x2x12x4xf32> loc("cache.1.values"), %arg28: tensor<8x16xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg29: tensor<2x2x12x4xf32> loc("cache.1.keys"), %arg30: tensor<16x16xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg31: tensor<32x16xf32> loc("model.layers.1.mlp.gate_proj.weight")) -> (tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<2x1x32xf32>
    %cst_0 = stablehlo.constant dense<4.471500e-02> : tensor<2x1x32xf32>
    %cst_1 = stablehlo.constant dense<0.797884583> : tensor<2x1x32xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<2x1x32xf32>
    %cst_3 = stablehlo.constant dense<5.000000e-01> : tensor<2x1x32xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x2x12xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<2x2x2x12xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<2x1x1x12xf32>
    %c_7 = stablehlo.constant dense<[[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]]]]> : tensor<1x1x1x12xi64>
    %cst_8 = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
    %cst_9 = stablehlo.constant dense<6.250000e-02> : tensor<2x1xf32>
    %cst_10 = stablehlo.constant dense<2.000000e+00> : tensor<2x1x16xf32>
    %c_11 = stablehlo.constant dense<false> : tensor<i1>
    %c_12 = stablehlo.constant dense<true> : tensor<i1>
    %cst_13 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.convert %arg16 : (tensor<2xi64>) -> tensor<2xui32>
    %1 = "stablehlo.gather"(%arg0, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<2xui32>) -> tensor<2x16xf32>
    %2 = stablehlo.reshape %1 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %3 = stablehlo.broadcast_in_dim %arg15, dims = [] : (tensor<f32>) -> tensor<2x1x16xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<2x1x16xf32>
    %5 = stablehlo.power %4, %cst_10 : tensor<2x1x16xf32>
    %6 = stablehlo.reduce(%5 init: %cst_14) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %7 = stablehlo.multiply %6, %cst_9 : tensor<2x1xf32>
    %8 = stablehlo.reshape %7 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %9 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<2x1x1xf32>
    %10 = stablehlo.add %8, %9 : tensor<2x1x1xf32>
    %11 = stablehlo.rsqrt %10 : tensor<2x1x1xf32>
    %12 = stablehlo.reshape %11 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %14 = stablehlo.multiply %4, %13 : tensor<2x1x16xf32>
    %15 = stablehlo.add %arg14, %cst_8 : tensor<16xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %17 = stablehlo.multiply %14, %16 : tensor<2x1x16xf32>
    %18 = stablehlo.reshape %17 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %19 = stablehlo.transpose %arg24, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %20 = stablehlo.dot_general %18, %19, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %21 = stablehlo.reshape %20 : (tensor<2x16xf32>) -> tensor<2x4x1x4xf32>
    %22 = stablehlo.reshape %arg17 : (tensor<i64>) -> tensor<1x1x1xi64>
    %23 = stablehlo.convert %22 : (tensor<1x1x1xi64>) -> tensor<1x1x1xf32>
    %24 = stablehlo.reshape %23 : (tensor<1x1x1xf32>) -> tensor<1x1xf32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x2xf32>
    %26 = stablehlo.reshape %arg21 : (tensor<2xf32>) -> tensor<1x1x2xf32>
    %27 = stablehlo.multiply %25, %26 : tensor<1x1x2xf32>
    %28 = stablehlo.concatenate %27, %27, dim = 2 : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<1x1x4xf32>
    %29 = stablehlo.cosine %28 : tensor<1x1x4xf32>
    %30 = stablehlo.reshape %29 : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x4x1x4xf32>
    %32 = stablehlo.multiply %21, %31 : tensor<2x4x1x4xf32>
    %33 = stablehlo.slice %21 [0:2, 0:4, 0:1, 2:4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %34 = stablehlo.negate %33 : tensor<2x4x1x2xf32>
    %35 = stablehlo.slice %21 [0:2, 0:4, 0:1, 0:2] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %36 = stablehlo.concatenate %34, %35, dim = 3 : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> tensor<2x4x1x4xf32>
    %37 = stablehlo.sine %28 : tensor<1x1x4xf32>
    %38 = stablehlo.reshape %37 : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x4x1x4xf32>
    %40 = stablehlo.multiply %36, %39 : tensor<2x4x1x4xf32>
    %41 = stablehlo.add %32, %40 : tensor<2x4x1x4xf32>
    %42 = stablehlo.reshape %41 : (tensor<2x4x1x4xf32>) -> tensor<2x2x2x4xf32>
    %43 = stablehlo.broadcast_in_dim %arg20, dims = [] : (tensor<f32>) -> tensor<2x2x2x4xf32>
    %44 = stablehlo.multiply %42, %43 : tensor<2x2x2x4xf32>
    %45 = stablehlo.reshape %44 : (tensor<2x2x2x4xf32>) -> tensor<4x2x4xf32>
    %46 = stablehlo.reshape %arg17 : (tensor<i64>) -> tensor<1xi64>
    %47 = stablehlo.transpose %arg22, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %48 = stablehlo.dot_general %18, %47, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %49 = stablehlo.reshape %48 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %50 = stablehlo.broadcast_in_dim %30, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x2x1x4xf32>
    %51 = stablehlo.multiply %49, %50 : tensor<2x2x1x4xf32>
    %52 = stablehlo.slice %49 [0:2, 0:2, 0:1, 2:4] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %53 = stablehlo.negate %52 : tensor<2x2x1x2xf32>
    %54 = stablehlo.slice %49 [0:2, 0:2, 0:1, 0:2] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %55 = stablehlo.concatenate %53, %54, dim = 3 : (tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>) -> tensor<2x2x1x4xf32>
    %56 = stablehlo.broadcast_in_dim %38, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x2x1x4xf32>
    %57 = stablehlo.multiply %55, %56 : tensor<2x2x1x4xf32>
    %58 = stablehlo.add %51, %57 : tensor<2x2x1x4xf32>
    %59 = "stablehlo.scatter"(%arg23, %46, %58) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %60 = stablehlo.transpose %59, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,4,12]{2,3,1,0}"} : (tensor<2x2x12x4xf32>) -> tensor<2x2x4x12xf32>
    %61 = stablehlo.broadcast_in_dim %arg20, dims = [] : (tensor<f32>) -> tensor<2x2x4x12xf32>
    %62 = stablehlo.multiply %60, %61 : tensor<2x2x4x12xf32>
    %63 = stablehlo.reshape %62 : (tensor<2x2x4x12xf32>) -> tensor<4x4x12xf32>
    %64 = stablehlo.dot_general %45, %63, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x4xf32>, tensor<4x4x12xf32>) -> tensor<4x2x12xf32>
    %65 = stablehlo.reshape %64 : (tensor<4x2x12xf32>) -> tensor<2x2x2x12xf32>
    %66 = stablehlo.broadcast_in_dim %22, dims = [0, 1, 2] : (tensor<1x1x1xi64>) -> tensor<1x1x1x12xi64>
    %67 = stablehlo.compare  LE, %c_7, %66 : (tensor<1x1x1x12xi64>, tensor<1x1x1x12xi64>) -> tensor<1x1x1x12xi1>
    %68 = stablehlo.reshape %67 : (tensor<1x1x1x12xi1>) -> tensor<1x1x12xi1>
    %69 = stablehlo.broadcast_in_dim %68, dims = [1, 2, 3] : (tensor<1x1x12xi1>) -> tensor<2x1x1x12xi1>
    %70 = stablehlo.reshape %arg19 : (tensor<f32>) -> tensor<1x1xf32>
    %71 = stablehlo.broadcast_in_dim %70, dims = [1, 2] : (tensor<1x1xf32>) -> tensor<2x1x1x12xf32>
    %72 = stablehlo.select %69, %cst_6, %71 : tensor<2x1x1x12xi1>, tensor<2x1x1x12xf32>
    %73 = stablehlo.reshape %72 : (tensor<2x1x1x12xf32>) -> tensor<2x12xf32>
    %74 = stablehlo.broadcast_in_dim %73, dims = [0, 3] : (tensor<2x12xf32>) -> tensor<2x2x2x12xf32>
    %75 = stablehlo.add %65, %74 : tensor<2x2x2x12xf32>
    %76 = stablehlo.compare  EQ, %75, %cst_5 : (tensor<2x2x2x12xf32>, tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xi1>
    %77 = stablehlo.reduce(%76 init: %c_12) across dimensions = [3] : (tensor<2x2x2x12xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg32: tensor<i1>, %arg33: tensor<i1>)  {
      %251 = stablehlo.and %arg32, %arg33 : tensor<i1>
      %252 = stablehlo.select %251, %c_12, %c_11 : tensor<i1>, tensor<i1>
      stablehlo.return %252 : tensor<i1>
    }
    %78 = stablehlo.broadcast_in_dim %77, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x12xi1>
    %79 = stablehlo.reduce(%75 init: %cst_13) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %80 = stablehlo.broadcast_in_dim %79, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %81 = stablehlo.subtract %75, %80 : tensor<2x2x2x12xf32>
    %82 = stablehlo.exponential %81 : tensor<2x2x2x12xf32>
    %83 = stablehlo.reduce(%82 init: %cst_14) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %84 = stablehlo.broadcast_in_dim %83, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %85 = stablehlo.divide %82, %84 : tensor<2x2x2x12xf32>
    %86 = stablehlo.select %78, %cst_4, %85 : tensor<2x2x2x12xi1>, tensor<2x2x2x12xf32>
    %87 = stablehlo.reshape %86 : (tensor<2x2x2x12xf32>) -> tensor<4x2x12xf32>
    %88 = stablehlo.transpose %arg13, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %89 = stablehlo.dot_general %18, %88, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %90 = stablehlo.reshape %89 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %91 = "stablehlo.scatter"(%arg18, %46, %90) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %92 = stablehlo.reshape %91 : (tensor<2x2x12x4xf32>) -> tensor<4x12x4xf32>
    %93 = stablehlo.dot_general %87, %92, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x12xf32>, tensor<4x12x4xf32>) -> tensor<4x2x4xf32>
    %94 = stablehlo.reshape %93 : (tensor<4x2x4xf32>) -> tensor<2x16xf32>
    %95 = stablehlo.transpose %arg12, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %96 = stablehlo.dot_general %94, %95, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %97 = stablehlo.reshape %96 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %98 = stablehlo.add %4, %97 : tensor<2x1x16xf32>
    %99 = stablehlo.power %98, %cst_10 : tensor<2x1x16xf32>
    %100 = stablehlo.reduce(%99 init: %cst_14) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %101 = stablehlo.multiply %100, %cst_9 : tensor<2x1xf32>
    %102 = stablehlo.reshape %101 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %103 = stablehlo.add %102, %9 : tensor<2x1x1xf32>
    %104 = stablehlo.rsqrt %103 : tensor<2x1x1xf32>
    %105 = stablehlo.reshape %104 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %106 = stablehlo.broadcast_in_dim %105, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %107 = stablehlo.multiply %98, %106 : tensor<2x1x16xf32>
    %108 = stablehlo.add %arg11, %cst_8 : tensor<16xf32>
    %109 = stablehlo.broadcast_in_dim %108, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %110 = stablehlo.multiply %107, %109 : tensor<2x1x16xf32>
    %111 = stablehlo.reshape %110 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %112 = stablehlo.transpose %arg25, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %113 = stablehlo.dot_general %111, %112, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %114 = stablehlo.reshape %113 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %115 = stablehlo.multiply %114, %cst_3 : tensor<2x1x32xf32>
    %116 = stablehlo.power %114, %cst : tensor<2x1x32xf32>
    %117 = stablehlo.multiply %116, %cst_0 : tensor<2x1x32xf32>
    %118 = stablehlo.add %114, %117 : tensor<2x1x32xf32>
    %119 = stablehlo.multiply %118, %cst_1 : tensor<2x1x32xf32>
    %120 = stablehlo.tanh %119 : tensor<2x1x32xf32>
    %121 = stablehlo.add %120, %cst_2 : tensor<2x1x32xf32>
    %122 = stablehlo.multiply %115, %121 : tensor<2x1x32xf32>
    %123 = stablehlo.transpose %arg10, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %124 = stablehlo.dot_general %111, %123, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %125 = stablehlo.reshape %124 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %126 = stablehlo.multiply %122, %125 : tensor<2x1x32xf32>
    %127 = stablehlo.reshape %126 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %128 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %129 = stablehlo.dot_general %127, %128, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x32xf32>, tensor<32x16xf32>) -> tensor<2x16xf32>
    %130 = stablehlo.reshape %129 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %131 = stablehlo.add %98, %130 : tensor<2x1x16xf32>
    %132 = stablehlo.optimization_barrier %131 : tensor<2x1x16xf32>
    %133 = stablehlo.custom_call @LayoutConstraint(%132) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
    %134 = stablehlo.power %133, %cst_10 : tensor<2x1x16xf32>
    %135 = stablehlo.reduce(%134 init: %cst_14) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %136 = stablehlo.multiply %135, %cst_9 : tensor<2x1xf32>
    %137 = stablehlo.reshape %136 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %138 = stablehlo.add %137, %9 : tensor<2x1x1xf32>
    %139 = stablehlo.rsqrt %138 : tensor<2x1x1xf32>
    %140 = stablehlo.reshape %139 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %141 = stablehlo.broadcast_in_dim %140, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %142 = stablehlo.multiply %133, %141 : tensor<2x1x16xf32>
    %143 = stablehlo.add %arg8, %cst_8 : tensor<16xf32>
    %144 = stablehlo.broadcast_in_dim %143, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %145 = stablehlo.multiply %142, %144 : tensor<2x1x16xf32>
    %146 = stablehlo.reshape %145 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %147 = stablehlo.transpose %arg30, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %148 = stablehlo.dot_general %146, %147, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %149 = stablehlo.reshape %148 : (tensor<2x16xf32>) -> tensor<2x4x1x4xf32>
    %150 = stablehlo.multiply %149, %31 : tensor<2x4x1x4xf32>
    %151 = stablehlo.slice %149 [0:2, 0:4, 0:1, 2:4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %152 = stablehlo.negate %151 : tensor<2x4x1x2xf32>
    %153 = stablehlo.slice %149 [0:2, 0:4, 0:1, 0:2] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %154 = stablehlo.concatenate %152, %153, dim = 3 : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> tensor<2x4x1x4xf32>
    %155 = stablehlo.multiply %154, %39 : tensor<2x4x1x4xf32>
    %156 = stablehlo.add %150, %155 : tensor<2x4x1x4xf32>
    %157 = stablehlo.reshape %156 : (tensor<2x4x1x4xf32>) -> tensor<2x2x2x4xf32>
    %158 = stablehlo.multiply %157, %43 : tensor<2x2x2x4xf32>
    %159 = stablehlo.reshape %158 : (tensor<2x2x2x4xf32>) -> tensor<4x2x4xf32>
    %160 = stablehlo.reshape %arg26 : (tensor<i64>) -> tensor<1xi64>
    %161 = stablehlo.transpose %arg28, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %162 = stablehlo.dot_general %146, %161, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %163 = stablehlo.reshape %162 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %164 = stablehlo.multiply %163, %50 : tensor<2x2x1x4xf32>
    %165 = stablehlo.slice %163 [0:2, 0:2, 0:1, 2:4] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %166 = stablehlo.negate %165 : tensor<2x2x1x2xf32>
    %167 = stablehlo.slice %163 [0:2, 0:2, 0:1, 0:2] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %168 = stablehlo.concatenate %166, %167, dim = 3 : (tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>) -> tensor<2x2x1x4xf32>
    %169 = stablehlo.multiply %168, %56 : tensor<2x2x1x4xf32>
    %170 = stablehlo.add %164, %169 : tensor<2x2x1x4xf32>
    %171 = "stablehlo.scatter"(%arg29, %160, %170) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %172 = stablehlo.transpose %171, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,4,12]{2,3,1,0}"} : (tensor<2x2x12x4xf32>) -> tensor<2x2x4x12xf32>
    %173 = stablehlo.multiply %172, %61 : tensor<2x2x4x12xf32>
    %174 = stablehlo.reshape %173 : (tensor<2x2x4x12xf32>) -> tensor<4x4x12xf32>
    %175 = stablehlo.dot_general %159, %174, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x4xf32>, tensor<4x4x12xf32>) -> tensor<4x2x12xf32>
    %176 = stablehlo.reshape %175 : (tensor<4x2x12xf32>) -> tensor<2x2x2x12xf32>
    %177 = stablehlo.add %176, %74 : tensor<2x2x2x12xf32>
    %178 = stablehlo.compare  EQ, %177, %cst_5 : (tensor<2x2x2x12xf32>, tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xi1>
    %179 = stablehlo.reduce(%178 init: %c_12) across dimensions = [3] : (tensor<2x2x2x12xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg32: tensor<i1>, %arg33: tensor<i1>)  {
      %251 = stablehlo.and %arg32, %arg33 : tensor<i1>
      %252 = stablehlo.select %251, %c_12, %c_11 : tensor<i1>, tensor<i1>
      stablehlo.return %252 : tensor<i1>
    }
    %180 = stablehlo.broadcast_in_dim %179, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x12xi1>
    %181 = stablehlo.reduce(%177 init: %cst_13) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %182 = stablehlo.broadcast_in_dim %181, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %183 = stablehlo.subtract %177, %182 : tensor<2x2x2x12xf32>
    %184 = stablehlo.exponential %183 : tensor<2x2x2x12xf32>
    %185 = stablehlo.reduce(%184 init: %cst_14) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %186 = stablehlo.broadcast_in_dim %185, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %187 = stablehlo.divide %184, %186 : tensor<2x2x2x12xf32>
    %188 = stablehlo.select %180, %cst_4, %187 : tensor<2x2x2x12xi1>, tensor<2x2x2x12xf32>
    %189 = stablehlo.reshape %188 : (tensor<2x2x2x12xf32>) -> tensor<4x2x12xf32>
    %190 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %191 = stablehlo.dot_general %146, %190, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %192 = stablehlo.reshape %191 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %193 = "stablehlo.scatter"(%arg27, %160, %192) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %194 = stablehlo.reshape %193 : (tensor<2x2x12x4xf32>) -> tensor<4x12x4xf32>
    %195 = stablehlo.dot_general %189, %194, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x12xf32>, tensor<4x12x4xf32>) -> tensor<4x2x4xf32>
    %196 = stablehlo.reshape %195 : (tensor<4x2x4xf32>) -> tensor<2x16xf32>
    %197 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %198 = stablehlo.dot_general %196, %197, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %199 = stablehlo.reshape %198 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %200 = stablehlo.add %133, %199 : tensor<2x1x16xf32>
    %201 = stablehlo.power %200, %cst_10 : tensor<2x1x16xf32>
    %202 = stablehlo.reduce(%201 init: %cst_14) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %203 = stablehlo.multiply %202, %cst_9 : tensor<2x1xf32>
    %204 = stablehlo.reshape %203 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %205 = stablehlo.add %204, %9 : tensor<2x1x1xf32>
    %206 = stablehlo.rsqrt %205 : tensor<2x1x1xf32>
    %207 = stablehlo.reshape %206 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %208 = stablehlo.broadcast_in_dim %207, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %209 = stablehlo.multiply %200, %208 : tensor<2x1x16xf32>
    %210 = stablehlo.add %arg5, %cst_8 : tensor<16xf32>
    %211 = stablehlo.broadcast_in_dim %210, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %212 = stablehlo.multiply %209, %211 : tensor<2x1x16xf32>
    %213 = stablehlo.reshape %212 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %214 = stablehlo.transpose %arg31, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %215 = stablehlo.dot_general %213, %214, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %216 = stablehlo.reshape %215 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %217 = stablehlo.multiply %216, %cst_3 : tensor<2x1x32xf32>
    %218 = stablehlo.power %216, %cst : tensor<2x1x32xf32>
    %219 = stablehlo.multiply %218, %cst_0 : tensor<2x1x32xf32>
    %220 = stablehlo.add %216, %219 : tensor<2x1x32xf32>
    %221 = stablehlo.multiply %220, %cst_1 : tensor<2x1x32xf32>
    %222 = stablehlo.tanh %221 : tensor<2x1x32xf32>
    %223 = stablehlo.add %222, %cst_2 : tensor<2x1x32xf32>
    %224 = stablehlo.multiply %217, %223 : tensor<2x1x32xf32>
    %225 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %226 = stablehlo.dot_general %213, %225, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %227 = stablehlo.reshape %226 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %228 = stablehlo.multiply %224, %227 : tensor<2x1x32xf32>
    %229 = stablehlo.reshape %228 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %230 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %231 = stablehlo.dot_general %229, %230, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x32xf32>, tensor<32x16xf32>) -> tensor<2x16xf32>
    %232 = stablehlo.reshape %231 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %233 = stablehlo.add %200, %232 : tensor<2x1x16xf32>
    %234 = stablehlo.power %233, %cst_10 : tensor<2x1x16xf32>
    %235 = stablehlo.reduce(%234 init: %cst_14) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %236 = stablehlo.multiply %235, %cst_9 : tensor<2x1xf32>
    %237 = stablehlo.reshape %236 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %238 = stablehlo.add %237, %9 : tensor<2x1x1xf32>
    %239 = stablehlo.rsqrt %238 : tensor<2x1x1xf32>
    %240 = stablehlo.reshape %239 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %241 = stablehlo.broadcast_in_dim %240, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %242 = stablehlo.multiply %233, %241 : tensor<2x1x16xf32>
    %243 = stablehlo.add %arg1, %cst_8 : tensor<16xf32>
    %244 = stablehlo.broadcast_in_dim %243, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %245 = stablehlo.multiply %242, %244 : tensor<2x1x16xf32>
    %246 = stablehlo.reshape %245 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %247 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %248 = stablehlo.dot_general %246, %247, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x48xf32>) -> tensor<2x48xf32>
    %249 = stablehlo.add %arg17, %c : tensor<i64>
    %250 = stablehlo.add %arg26, %c : tensor<i64>
    return %248, %59, %91, %171, %193, %249, %250 : tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>
  }
}
