module @IrToHlo.642 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<48x16xf32> loc("lm_head.weight"), %arg1: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg2: tensor<16x32xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg3: tensor<32x16xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg4: tensor<16x16xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg5: tensor<8xf32> loc("model.layers.1.self_attn.v_proj.bias"), %arg6: tensor<8x16xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg7: tensor<16x32xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg8: tensor<32x16xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg9: tensor<16x16xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg10: tensor<8xf32> loc("model.layers.0.self_attn.v_proj.bias"), %arg11: tensor<8x16xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg12: tensor<2xi64> loc("tokens"), %arg13: tensor<48x16xf32> loc("model.embed_tokens.weight"), %arg14: tensor<16xf32> loc("model.layers.0.input_layernorm.weight"), %arg15: tensor<i64> loc("cache.0.cumulative_length"), %arg16: tensor<2x2x12x4xf32> loc("cache.0.values"), %arg17: tensor<f32> loc("lifted.float32[-inf]"), %arg18: tensor<f32> loc("lifted.float32[0.7071067690849304]"), %arg19: tensor<2xf32> loc("model.rotary_emb.inv_freq"), %arg20: tensor<8xf32> loc("model.layers.0.self_attn.k_proj.bias"), %arg21: tensor<8x16xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg22: tensor<2x2x12x4xf32> loc("cache.0.keys"), %arg23: tensor<16xf32> loc("model.layers.0.self_attn.q_proj.bias"), %arg24: tensor<16x16xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg25: tensor<16xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg26: tensor<32x16xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg27: tensor<16xf32> loc("model.layers.1.input_layernorm.weight"), %arg28: tensor<i64> loc("cache.1.cumulative_length"), %arg29: tensor<2x2x12x4xf32> loc("cache.1.values"), %arg30: tensor<8xf32> loc("model.layers.1.self_attn.k_proj.bias"), %arg31: tensor<8x16xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg32: tensor<2x2x12x4xf32> loc("cache.1.keys"), %arg33: tensor<16xf32> loc("model.layers.1.self_attn.q_proj.bias"), %arg34: tensor<16x16xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg35: tensor<16xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg36: tensor<32x16xf32> loc("model.layers.1.mlp.gate_proj.weight"), %arg37: tensor<16xf32> loc("model.norm.weight")) -> (tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x2x2x12xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<2x2x2x12xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x1x1x12xf32>
    %c_2 = stablehlo.constant dense<[[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]]]]> : tensor<1x1x1x12xi64>
    %cst_3 = stablehlo.constant dense<6.250000e-02> : tensor<2x1xf32>
    %cst_4 = stablehlo.constant dense<2.000000e+00> : tensor<2x1x16xf32>
    %c_5 = stablehlo.constant dense<false> : tensor<i1>
    %c_6 = stablehlo.constant dense<true> : tensor<i1>
    %cst_7 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg37, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %1 = stablehlo.convert %arg12 : (tensor<2xi64>) -> tensor<2xui32>
    %2 = "stablehlo.gather"(%arg13, %1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<2xui32>) -> tensor<2x16xf32>
    %3 = stablehlo.reshape %2 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %4 = stablehlo.broadcast_in_dim %arg14, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %5 = stablehlo.power %3, %cst_4 : tensor<2x1x16xf32>
    %6 = stablehlo.reduce(%5 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %7 = stablehlo.multiply %6, %cst_3 : tensor<2x1xf32>
    %8 = stablehlo.reshape %7 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %9 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x1x1xf32>
    %10 = stablehlo.add %8, %9 : tensor<2x1x1xf32>
    %11 = stablehlo.rsqrt %10 : tensor<2x1x1xf32>
    %12 = stablehlo.reshape %11 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %14 = stablehlo.multiply %3, %13 : tensor<2x1x16xf32>
    %15 = stablehlo.multiply %4, %14 : tensor<2x1x16xf32>
    %16 = stablehlo.reshape %15 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %17 = stablehlo.transpose %arg24, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %18 = stablehlo.dot_general %16, %17, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %19 = stablehlo.reshape %18 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %20 = stablehlo.broadcast_in_dim %arg23, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %21 = stablehlo.add %19, %20 : tensor<2x1x16xf32>
    %22 = stablehlo.reshape %21 : (tensor<2x1x16xf32>) -> tensor<2x4x1x4xf32>
    %23 = stablehlo.reshape %arg15 : (tensor<i64>) -> tensor<1x1x1xi64>
    %24 = stablehlo.convert %23 : (tensor<1x1x1xi64>) -> tensor<1x1x1xf32>
    %25 = stablehlo.reshape %24 : (tensor<1x1x1xf32>) -> tensor<1x1xf32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x2xf32>
    %27 = stablehlo.reshape %arg19 : (tensor<2xf32>) -> tensor<1x1x2xf32>
    %28 = stablehlo.multiply %26, %27 : tensor<1x1x2xf32>
    %29 = stablehlo.concatenate %28, %28, dim = 2 : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<1x1x4xf32>
    %30 = stablehlo.cosine %29 : tensor<1x1x4xf32>
    %31 = stablehlo.reshape %30 : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x4x1x4xf32>
    %33 = stablehlo.multiply %22, %32 : tensor<2x4x1x4xf32>
    %34 = stablehlo.slice %22 [0:2, 0:4, 0:1, 2:4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %35 = stablehlo.negate %34 : tensor<2x4x1x2xf32>
    %36 = stablehlo.slice %22 [0:2, 0:4, 0:1, 0:2] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %37 = stablehlo.concatenate %35, %36, dim = 3 : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> tensor<2x4x1x4xf32>
    %38 = stablehlo.sine %29 : tensor<1x1x4xf32>
    %39 = stablehlo.reshape %38 : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
    %40 = stablehlo.broadcast_in_dim %39, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x4x1x4xf32>
    %41 = stablehlo.multiply %37, %40 : tensor<2x4x1x4xf32>
    %42 = stablehlo.add %33, %41 : tensor<2x4x1x4xf32>
    %43 = stablehlo.reshape %42 : (tensor<2x4x1x4xf32>) -> tensor<2x2x2x4xf32>
    %44 = stablehlo.broadcast_in_dim %arg18, dims = [] : (tensor<f32>) -> tensor<2x2x2x4xf32>
    %45 = stablehlo.multiply %43, %44 : tensor<2x2x2x4xf32>
    %46 = stablehlo.reshape %45 : (tensor<2x2x2x4xf32>) -> tensor<4x2x4xf32>
    %47 = stablehlo.reshape %arg15 : (tensor<i64>) -> tensor<1xi64>
    %48 = stablehlo.transpose %arg21, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %49 = stablehlo.dot_general %16, %48, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %50 = stablehlo.reshape %49 : (tensor<2x8xf32>) -> tensor<2x1x8xf32>
    %51 = stablehlo.broadcast_in_dim %arg20, dims = [2] : (tensor<8xf32>) -> tensor<2x1x8xf32>
    %52 = stablehlo.add %50, %51 : tensor<2x1x8xf32>
    %53 = stablehlo.reshape %52 : (tensor<2x1x8xf32>) -> tensor<2x2x1x4xf32>
    %54 = stablehlo.broadcast_in_dim %31, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x2x1x4xf32>
    %55 = stablehlo.multiply %53, %54 : tensor<2x2x1x4xf32>
    %56 = stablehlo.slice %53 [0:2, 0:2, 0:1, 2:4] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %57 = stablehlo.negate %56 : tensor<2x2x1x2xf32>
    %58 = stablehlo.slice %53 [0:2, 0:2, 0:1, 0:2] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %59 = stablehlo.concatenate %57, %58, dim = 3 : (tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>) -> tensor<2x2x1x4xf32>
    %60 = stablehlo.broadcast_in_dim %39, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x2x1x4xf32>
    %61 = stablehlo.multiply %59, %60 : tensor<2x2x1x4xf32>
    %62 = stablehlo.add %55, %61 : tensor<2x2x1x4xf32>
    %63 = "stablehlo.scatter"(%arg22, %47, %62) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg38: tensor<f32>, %arg39: tensor<f32>):
      stablehlo.return %arg39 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %64 = stablehlo.transpose %63, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,4,12]{2,3,1,0}"} : (tensor<2x2x12x4xf32>) -> tensor<2x2x4x12xf32>
    %65 = stablehlo.broadcast_in_dim %arg18, dims = [] : (tensor<f32>) -> tensor<2x2x4x12xf32>
    %66 = stablehlo.multiply %64, %65 : tensor<2x2x4x12xf32>
    %67 = stablehlo.reshape %66 : (tensor<2x2x4x12xf32>) -> tensor<4x4x12xf32>
    %68 = stablehlo.dot_general %46, %67, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x4xf32>, tensor<4x4x12xf32>) -> tensor<4x2x12xf32>
    %69 = stablehlo.reshape %68 : (tensor<4x2x12xf32>) -> tensor<2x2x2x12xf32>
    %70 = stablehlo.broadcast_in_dim %23, dims = [0, 1, 2] : (tensor<1x1x1xi64>) -> tensor<1x1x1x12xi64>
    %71 = stablehlo.compare  LE, %c_2, %70 : (tensor<1x1x1x12xi64>, tensor<1x1x1x12xi64>) -> tensor<1x1x1x12xi1>
    %72 = stablehlo.reshape %71 : (tensor<1x1x1x12xi1>) -> tensor<1x1x12xi1>
    %73 = stablehlo.broadcast_in_dim %72, dims = [1, 2, 3] : (tensor<1x1x12xi1>) -> tensor<2x1x1x12xi1>
    %74 = stablehlo.reshape %arg17 : (tensor<f32>) -> tensor<1x1xf32>
    %75 = stablehlo.broadcast_in_dim %74, dims = [1, 2] : (tensor<1x1xf32>) -> tensor<2x1x1x12xf32>
    %76 = stablehlo.select %73, %cst_1, %75 : tensor<2x1x1x12xi1>, tensor<2x1x1x12xf32>
    %77 = stablehlo.reshape %76 : (tensor<2x1x1x12xf32>) -> tensor<2x12xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [0, 3] : (tensor<2x12xf32>) -> tensor<2x2x2x12xf32>
    %79 = stablehlo.add %69, %78 : tensor<2x2x2x12xf32>
    %80 = stablehlo.compare  EQ, %79, %cst_0 : (tensor<2x2x2x12xf32>, tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xi1>
    %81 = stablehlo.reduce(%80 init: %c_6) across dimensions = [3] : (tensor<2x2x2x12xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg38: tensor<i1>, %arg39: tensor<i1>)  {
      %250 = stablehlo.and %arg38, %arg39 : tensor<i1>
      %251 = stablehlo.select %250, %c_6, %c_5 : tensor<i1>, tensor<i1>
      stablehlo.return %251 : tensor<i1>
    }
    %82 = stablehlo.broadcast_in_dim %81, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x12xi1>
    %83 = stablehlo.reduce(%79 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %84 = stablehlo.broadcast_in_dim %83, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %85 = stablehlo.subtract %79, %84 : tensor<2x2x2x12xf32>
    %86 = stablehlo.exponential %85 : tensor<2x2x2x12xf32>
    %87 = stablehlo.reduce(%86 init: %cst_8) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %88 = stablehlo.broadcast_in_dim %87, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %89 = stablehlo.divide %86, %88 : tensor<2x2x2x12xf32>
    %90 = stablehlo.select %82, %cst, %89 : tensor<2x2x2x12xi1>, tensor<2x2x2x12xf32>
    %91 = stablehlo.reshape %90 : (tensor<2x2x2x12xf32>) -> tensor<4x2x12xf32>
    %92 = stablehlo.transpose %arg11, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %93 = stablehlo.dot_general %16, %92, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %94 = stablehlo.reshape %93 : (tensor<2x8xf32>) -> tensor<2x1x8xf32>
    %95 = stablehlo.broadcast_in_dim %arg10, dims = [2] : (tensor<8xf32>) -> tensor<2x1x8xf32>
    %96 = stablehlo.add %94, %95 : tensor<2x1x8xf32>
    %97 = stablehlo.reshape %96 : (tensor<2x1x8xf32>) -> tensor<2x2x1x4xf32>
    %98 = "stablehlo.scatter"(%arg16, %47, %97) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg38: tensor<f32>, %arg39: tensor<f32>):
      stablehlo.return %arg39 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %99 = stablehlo.reshape %98 : (tensor<2x2x12x4xf32>) -> tensor<4x12x4xf32>
    %100 = stablehlo.dot_general %91, %99, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x12xf32>, tensor<4x12x4xf32>) -> tensor<4x2x4xf32>
    %101 = stablehlo.reshape %100 : (tensor<4x2x4xf32>) -> tensor<2x16xf32>
    %102 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %103 = stablehlo.dot_general %101, %102, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %104 = stablehlo.reshape %103 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %105 = stablehlo.add %3, %104 : tensor<2x1x16xf32>
    %106 = stablehlo.broadcast_in_dim %arg25, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %107 = stablehlo.power %105, %cst_4 : tensor<2x1x16xf32>
    %108 = stablehlo.reduce(%107 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %109 = stablehlo.multiply %108, %cst_3 : tensor<2x1xf32>
    %110 = stablehlo.reshape %109 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %111 = stablehlo.add %110, %9 : tensor<2x1x1xf32>
    %112 = stablehlo.rsqrt %111 : tensor<2x1x1xf32>
    %113 = stablehlo.reshape %112 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %114 = stablehlo.broadcast_in_dim %113, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %115 = stablehlo.multiply %105, %114 : tensor<2x1x16xf32>
    %116 = stablehlo.multiply %106, %115 : tensor<2x1x16xf32>
    %117 = stablehlo.reshape %116 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %118 = stablehlo.transpose %arg26, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %119 = stablehlo.dot_general %117, %118, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %120 = stablehlo.reshape %119 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %121 = stablehlo.logistic %120 : tensor<2x1x32xf32>
    %122 = stablehlo.multiply %120, %121 : tensor<2x1x32xf32>
    %123 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %124 = stablehlo.dot_general %117, %123, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %125 = stablehlo.reshape %124 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %126 = stablehlo.multiply %122, %125 : tensor<2x1x32xf32>
    %127 = stablehlo.reshape %126 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %128 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %129 = stablehlo.dot_general %127, %128, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x32xf32>, tensor<32x16xf32>) -> tensor<2x16xf32>
    %130 = stablehlo.reshape %129 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %131 = stablehlo.add %105, %130 : tensor<2x1x16xf32>
    %132 = stablehlo.optimization_barrier %131 : tensor<2x1x16xf32>
    %133 = stablehlo.custom_call @LayoutConstraint(%132) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
    %134 = stablehlo.broadcast_in_dim %arg27, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %135 = stablehlo.power %133, %cst_4 : tensor<2x1x16xf32>
    %136 = stablehlo.reduce(%135 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %137 = stablehlo.multiply %136, %cst_3 : tensor<2x1xf32>
    %138 = stablehlo.reshape %137 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %139 = stablehlo.add %138, %9 : tensor<2x1x1xf32>
    %140 = stablehlo.rsqrt %139 : tensor<2x1x1xf32>
    %141 = stablehlo.reshape %140 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %142 = stablehlo.broadcast_in_dim %141, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %143 = stablehlo.multiply %133, %142 : tensor<2x1x16xf32>
    %144 = stablehlo.multiply %134, %143 : tensor<2x1x16xf32>
    %145 = stablehlo.reshape %144 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %146 = stablehlo.transpose %arg34, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %147 = stablehlo.dot_general %145, %146, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %148 = stablehlo.reshape %147 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %149 = stablehlo.broadcast_in_dim %arg33, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %150 = stablehlo.add %148, %149 : tensor<2x1x16xf32>
    %151 = stablehlo.reshape %150 : (tensor<2x1x16xf32>) -> tensor<2x4x1x4xf32>
    %152 = stablehlo.multiply %151, %32 : tensor<2x4x1x4xf32>
    %153 = stablehlo.slice %151 [0:2, 0:4, 0:1, 2:4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %154 = stablehlo.negate %153 : tensor<2x4x1x2xf32>
    %155 = stablehlo.slice %151 [0:2, 0:4, 0:1, 0:2] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %156 = stablehlo.concatenate %154, %155, dim = 3 : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> tensor<2x4x1x4xf32>
    %157 = stablehlo.multiply %156, %40 : tensor<2x4x1x4xf32>
    %158 = stablehlo.add %152, %157 : tensor<2x4x1x4xf32>
    %159 = stablehlo.reshape %158 : (tensor<2x4x1x4xf32>) -> tensor<2x2x2x4xf32>
    %160 = stablehlo.multiply %159, %44 : tensor<2x2x2x4xf32>
    %161 = stablehlo.reshape %160 : (tensor<2x2x2x4xf32>) -> tensor<4x2x4xf32>
    %162 = stablehlo.reshape %arg28 : (tensor<i64>) -> tensor<1xi64>
    %163 = stablehlo.transpose %arg31, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %164 = stablehlo.dot_general %145, %163, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %165 = stablehlo.reshape %164 : (tensor<2x8xf32>) -> tensor<2x1x8xf32>
    %166 = stablehlo.broadcast_in_dim %arg30, dims = [2] : (tensor<8xf32>) -> tensor<2x1x8xf32>
    %167 = stablehlo.add %165, %166 : tensor<2x1x8xf32>
    %168 = stablehlo.reshape %167 : (tensor<2x1x8xf32>) -> tensor<2x2x1x4xf32>
    %169 = stablehlo.multiply %168, %54 : tensor<2x2x1x4xf32>
    %170 = stablehlo.slice %168 [0:2, 0:2, 0:1, 2:4] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %171 = stablehlo.negate %170 : tensor<2x2x1x2xf32>
    %172 = stablehlo.slice %168 [0:2, 0:2, 0:1, 0:2] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %173 = stablehlo.concatenate %171, %172, dim = 3 : (tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>) -> tensor<2x2x1x4xf32>
    %174 = stablehlo.multiply %173, %60 : tensor<2x2x1x4xf32>
    %175 = stablehlo.add %169, %174 : tensor<2x2x1x4xf32>
    %176 = "stablehlo.scatter"(%arg32, %162, %175) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg38: tensor<f32>, %arg39: tensor<f32>):
      stablehlo.return %arg39 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %177 = stablehlo.transpose %176, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,4,12]{2,3,1,0}"} : (tensor<2x2x12x4xf32>) -> tensor<2x2x4x12xf32>
    %178 = stablehlo.multiply %177, %65 : tensor<2x2x4x12xf32>
    %179 = stablehlo.reshape %178 : (tensor<2x2x4x12xf32>) -> tensor<4x4x12xf32>
    %180 = stablehlo.dot_general %161, %179, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x4xf32>, tensor<4x4x12xf32>) -> tensor<4x2x12xf32>
    %181 = stablehlo.reshape %180 : (tensor<4x2x12xf32>) -> tensor<2x2x2x12xf32>
    %182 = stablehlo.add %181, %78 : tensor<2x2x2x12xf32>
    %183 = stablehlo.compare  EQ, %182, %cst_0 : (tensor<2x2x2x12xf32>, tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xi1>
    %184 = stablehlo.reduce(%183 init: %c_6) across dimensions = [3] : (tensor<2x2x2x12xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg38: tensor<i1>, %arg39: tensor<i1>)  {
      %250 = stablehlo.and %arg38, %arg39 : tensor<i1>
      %251 = stablehlo.select %250, %c_6, %c_5 : tensor<i1>, tensor<i1>
      stablehlo.return %251 : tensor<i1>
    }
    %185 = stablehlo.broadcast_in_dim %184, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x12xi1>
    %186 = stablehlo.reduce(%182 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %187 = stablehlo.broadcast_in_dim %186, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %188 = stablehlo.subtract %182, %187 : tensor<2x2x2x12xf32>
    %189 = stablehlo.exponential %188 : tensor<2x2x2x12xf32>
    %190 = stablehlo.reduce(%189 init: %cst_8) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %191 = stablehlo.broadcast_in_dim %190, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %192 = stablehlo.divide %189, %191 : tensor<2x2x2x12xf32>
    %193 = stablehlo.select %185, %cst, %192 : tensor<2x2x2x12xi1>, tensor<2x2x2x12xf32>
    %194 = stablehlo.reshape %193 : (tensor<2x2x2x12xf32>) -> tensor<4x2x12xf32>
    %195 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %196 = stablehlo.dot_general %145, %195, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %197 = stablehlo.reshape %196 : (tensor<2x8xf32>) -> tensor<2x1x8xf32>
    %198 = stablehlo.broadcast_in_dim %arg5, dims = [2] : (tensor<8xf32>) -> tensor<2x1x8xf32>
    %199 = stablehlo.add %197, %198 : tensor<2x1x8xf32>
    %200 = stablehlo.reshape %199 : (tensor<2x1x8xf32>) -> tensor<2x2x1x4xf32>
    %201 = "stablehlo.scatter"(%arg29, %162, %200) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg38: tensor<f32>, %arg39: tensor<f32>):
      stablehlo.return %arg39 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %202 = stablehlo.reshape %201 : (tensor<2x2x12x4xf32>) -> tensor<4x12x4xf32>
    %203 = stablehlo.dot_general %194, %202, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x12xf32>, tensor<4x12x4xf32>) -> tensor<4x2x4xf32>
    %204 = stablehlo.reshape %203 : (tensor<4x2x4xf32>) -> tensor<2x16xf32>
    %205 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %206 = stablehlo.dot_general %204, %205, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %207 = stablehlo.reshape %206 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %208 = stablehlo.add %133, %207 : tensor<2x1x16xf32>
    %209 = stablehlo.broadcast_in_dim %arg35, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %210 = stablehlo.power %208, %cst_4 : tensor<2x1x16xf32>
    %211 = stablehlo.reduce(%210 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %212 = stablehlo.multiply %211, %cst_3 : tensor<2x1xf32>
    %213 = stablehlo.reshape %212 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %214 = stablehlo.add %213, %9 : tensor<2x1x1xf32>
    %215 = stablehlo.rsqrt %214 : tensor<2x1x1xf32>
    %216 = stablehlo.reshape %215 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %217 = stablehlo.broadcast_in_dim %216, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %218 = stablehlo.multiply %208, %217 : tensor<2x1x16xf32>
    %219 = stablehlo.multiply %209, %218 : tensor<2x1x16xf32>
    %220 = stablehlo.reshape %219 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %221 = stablehlo.transpose %arg36, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %222 = stablehlo.dot_general %220, %221, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %223 = stablehlo.reshape %222 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %224 = stablehlo.logistic %223 : tensor<2x1x32xf32>
    %225 = stablehlo.multiply %223, %224 : tensor<2x1x32xf32>
    %226 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %227 = stablehlo.dot_general %220, %226, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %228 = stablehlo.reshape %227 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %229 = stablehlo.multiply %225, %228 : tensor<2x1x32xf32>
    %230 = stablehlo.reshape %229 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %231 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %232 = stablehlo.dot_general %230, %231, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x32xf32>, tensor<32x16xf32>) -> tensor<2x16xf32>
    %233 = stablehlo.reshape %232 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %234 = stablehlo.add %208, %233 : tensor<2x1x16xf32>
    %235 = stablehlo.power %234, %cst_4 : tensor<2x1x16xf32>
    %236 = stablehlo.reduce(%235 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %237 = stablehlo.multiply %236, %cst_3 : tensor<2x1xf32>
    %238 = stablehlo.reshape %237 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %239 = stablehlo.add %238, %9 : tensor<2x1x1xf32>
    %240 = stablehlo.rsqrt %239 : tensor<2x1x1xf32>
    %241 = stablehlo.reshape %240 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %242 = stablehlo.broadcast_in_dim %241, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %243 = stablehlo.multiply %234, %242 : tensor<2x1x16xf32>
    %244 = stablehlo.multiply %0, %243 : tensor<2x1x16xf32>
    %245 = stablehlo.reshape %244 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %246 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %247 = stablehlo.dot_general %245, %246, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x48xf32>) -> tensor<2x48xf32>
    %248 = stablehlo.add %arg15, %c : tensor<i64>
    %249 = stablehlo.add %arg28, %c : tensor<i64>
    return %247, %63, %98, %176, %201, %248, %249 : tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>
  }
}
