module @IrToHlo.636 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<48x16xf32> loc("lm_head.weight"), %arg1: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg2: tensor<16x32xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg3: tensor<32x16xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg4: tensor<16x16xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg5: tensor<8x16xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg6: tensor<16x32xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg7: tensor<32x16xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg8: tensor<16x16xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg9: tensor<8x16xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg10: tensor<2xi64> loc("tokens"), %arg11: tensor<48x16xf32> loc("model.embed_tokens.weight"), %arg12: tensor<16xf32> loc("model.layers.0.input_layernorm.weight"), %arg13: tensor<i64> loc("cache.0.cumulative_length"), %arg14: tensor<2x2x12x4xf32> loc("cache.0.values"), %arg15: tensor<f32> loc("lifted.float32[-inf]"), %arg16: tensor<f32> loc("lifted.float32[0.7071067690849304]"), %arg17: tensor<2xf32> loc("model.rotary_emb.inv_freq"), %arg18: tensor<8x16xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg19: tensor<2x2x12x4xf32> loc("cache.0.keys"), %arg20: tensor<16x16xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg21: tensor<16xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg22: tensor<32x16xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg23: tensor<16xf32> loc("model.layers.1.input_layernorm.weight"), %arg24: tensor<i64> loc("cache.1.cumulative_length"), %arg25: tensor<2x2x12x4xf32> loc("cache.1.values"), %arg26: tensor<8x16xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg27: tensor<2x2x12x4xf32> loc("cache.1.keys"), %arg28: tensor<16x16xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg29: tensor<16xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg30: tensor<32x16xf32> loc("model.layers.1.mlp.gate_proj.weight"), %arg31: tensor<16xf32> loc("model.norm.weight")) -> (tensor<2xi64>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>) {
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
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg31, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %1 = stablehlo.convert %arg10 : (tensor<2xi64>) -> tensor<2xui32>
    %2 = "stablehlo.gather"(%arg11, %1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<2xui32>) -> tensor<2x16xf32>
    %3 = stablehlo.reshape %2 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %4 = stablehlo.broadcast_in_dim %arg12, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %5 = stablehlo.power %3, %cst_4 : tensor<2x1x16xf32>
    %6 = stablehlo.reduce(%5 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
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
    %17 = stablehlo.transpose %arg20, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %18 = stablehlo.dot_general %16, %17, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %19 = stablehlo.reshape %18 : (tensor<2x16xf32>) -> tensor<2x4x1x4xf32>
    %20 = stablehlo.reshape %arg13 : (tensor<i64>) -> tensor<1x1x1xi64>
    %21 = stablehlo.convert %20 : (tensor<1x1x1xi64>) -> tensor<1x1x1xf32>
    %22 = stablehlo.reshape %21 : (tensor<1x1x1xf32>) -> tensor<1x1xf32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x2xf32>
    %24 = stablehlo.reshape %arg17 : (tensor<2xf32>) -> tensor<1x1x2xf32>
    %25 = stablehlo.multiply %23, %24 : tensor<1x1x2xf32>
    %26 = stablehlo.concatenate %25, %25, dim = 2 : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<1x1x4xf32>
    %27 = stablehlo.cosine %26 : tensor<1x1x4xf32>
    %28 = stablehlo.reshape %27 : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x4x1x4xf32>
    %30 = stablehlo.multiply %19, %29 : tensor<2x4x1x4xf32>
    %31 = stablehlo.slice %19 [0:2, 0:4, 0:1, 2:4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %32 = stablehlo.negate %31 : tensor<2x4x1x2xf32>
    %33 = stablehlo.slice %19 [0:2, 0:4, 0:1, 0:2] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %34 = stablehlo.concatenate %32, %33, dim = 3 : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> tensor<2x4x1x4xf32>
    %35 = stablehlo.sine %26 : tensor<1x1x4xf32>
    %36 = stablehlo.reshape %35 : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x4x1x4xf32>
    %38 = stablehlo.multiply %34, %37 : tensor<2x4x1x4xf32>
    %39 = stablehlo.add %30, %38 : tensor<2x4x1x4xf32>
    %40 = stablehlo.reshape %39 : (tensor<2x4x1x4xf32>) -> tensor<2x2x2x4xf32>
    %41 = stablehlo.broadcast_in_dim %arg16, dims = [] : (tensor<f32>) -> tensor<2x2x2x4xf32>
    %42 = stablehlo.multiply %40, %41 : tensor<2x2x2x4xf32>
    %43 = stablehlo.reshape %42 : (tensor<2x2x2x4xf32>) -> tensor<4x2x4xf32>
    %44 = stablehlo.reshape %arg13 : (tensor<i64>) -> tensor<1xi64>
    %45 = stablehlo.transpose %arg18, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %46 = stablehlo.dot_general %16, %45, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %47 = stablehlo.reshape %46 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %48 = stablehlo.broadcast_in_dim %28, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x2x1x4xf32>
    %49 = stablehlo.multiply %47, %48 : tensor<2x2x1x4xf32>
    %50 = stablehlo.slice %47 [0:2, 0:2, 0:1, 2:4] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %51 = stablehlo.negate %50 : tensor<2x2x1x2xf32>
    %52 = stablehlo.slice %47 [0:2, 0:2, 0:1, 0:2] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %53 = stablehlo.concatenate %51, %52, dim = 3 : (tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>) -> tensor<2x2x1x4xf32>
    %54 = stablehlo.broadcast_in_dim %36, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x2x1x4xf32>
    %55 = stablehlo.multiply %53, %54 : tensor<2x2x1x4xf32>
    %56 = stablehlo.add %49, %55 : tensor<2x2x1x4xf32>
    %57 = "stablehlo.scatter"(%arg19, %44, %56) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %58 = stablehlo.transpose %57, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,4,12]{2,3,1,0}"} : (tensor<2x2x12x4xf32>) -> tensor<2x2x4x12xf32>
    %59 = stablehlo.broadcast_in_dim %arg16, dims = [] : (tensor<f32>) -> tensor<2x2x4x12xf32>
    %60 = stablehlo.multiply %58, %59 : tensor<2x2x4x12xf32>
    %61 = stablehlo.reshape %60 : (tensor<2x2x4x12xf32>) -> tensor<4x4x12xf32>
    %62 = stablehlo.dot_general %43, %61, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x4xf32>, tensor<4x4x12xf32>) -> tensor<4x2x12xf32>
    %63 = stablehlo.reshape %62 : (tensor<4x2x12xf32>) -> tensor<2x2x2x12xf32>
    %64 = stablehlo.broadcast_in_dim %20, dims = [0, 1, 2] : (tensor<1x1x1xi64>) -> tensor<1x1x1x12xi64>
    %65 = stablehlo.compare  LE, %c_2, %64 : (tensor<1x1x1x12xi64>, tensor<1x1x1x12xi64>) -> tensor<1x1x1x12xi1>
    %66 = stablehlo.reshape %65 : (tensor<1x1x1x12xi1>) -> tensor<1x1x12xi1>
    %67 = stablehlo.broadcast_in_dim %66, dims = [1, 2, 3] : (tensor<1x1x12xi1>) -> tensor<2x1x1x12xi1>
    %68 = stablehlo.reshape %arg15 : (tensor<f32>) -> tensor<1x1xf32>
    %69 = stablehlo.broadcast_in_dim %68, dims = [1, 2] : (tensor<1x1xf32>) -> tensor<2x1x1x12xf32>
    %70 = stablehlo.select %67, %cst_1, %69 : tensor<2x1x1x12xi1>, tensor<2x1x1x12xf32>
    %71 = stablehlo.reshape %70 : (tensor<2x1x1x12xf32>) -> tensor<2x12xf32>
    %72 = stablehlo.broadcast_in_dim %71, dims = [0, 3] : (tensor<2x12xf32>) -> tensor<2x2x2x12xf32>
    %73 = stablehlo.add %63, %72 : tensor<2x2x2x12xf32>
    %74 = stablehlo.compare  EQ, %73, %cst_0 : (tensor<2x2x2x12xf32>, tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xi1>
    %75 = stablehlo.reduce(%74 init: %c_6) across dimensions = [3] : (tensor<2x2x2x12xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg32: tensor<i1>, %arg33: tensor<i1>)  {
      %236 = stablehlo.and %arg32, %arg33 : tensor<i1>
      %237 = stablehlo.select %236, %c_6, %c_5 : tensor<i1>, tensor<i1>
      stablehlo.return %237 : tensor<i1>
    }
    %76 = stablehlo.broadcast_in_dim %75, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x12xi1>
    %77 = stablehlo.reduce(%73 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %79 = stablehlo.subtract %73, %78 : tensor<2x2x2x12xf32>
    %80 = stablehlo.exponential %79 : tensor<2x2x2x12xf32>
    %81 = stablehlo.reduce(%80 init: %cst_9) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %82 = stablehlo.broadcast_in_dim %81, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %83 = stablehlo.divide %80, %82 : tensor<2x2x2x12xf32>
    %84 = stablehlo.select %76, %cst, %83 : tensor<2x2x2x12xi1>, tensor<2x2x2x12xf32>
    %85 = stablehlo.reshape %84 : (tensor<2x2x2x12xf32>) -> tensor<4x2x12xf32>
    %86 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %87 = stablehlo.dot_general %16, %86, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %88 = stablehlo.reshape %87 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %89 = "stablehlo.scatter"(%arg14, %44, %88) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %90 = stablehlo.reshape %89 : (tensor<2x2x12x4xf32>) -> tensor<4x12x4xf32>
    %91 = stablehlo.dot_general %85, %90, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x12xf32>, tensor<4x12x4xf32>) -> tensor<4x2x4xf32>
    %92 = stablehlo.reshape %91 : (tensor<4x2x4xf32>) -> tensor<2x16xf32>
    %93 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %94 = stablehlo.dot_general %92, %93, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %95 = stablehlo.reshape %94 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %96 = stablehlo.add %3, %95 : tensor<2x1x16xf32>
    %97 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %98 = stablehlo.power %96, %cst_4 : tensor<2x1x16xf32>
    %99 = stablehlo.reduce(%98 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %100 = stablehlo.multiply %99, %cst_3 : tensor<2x1xf32>
    %101 = stablehlo.reshape %100 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %102 = stablehlo.add %101, %9 : tensor<2x1x1xf32>
    %103 = stablehlo.rsqrt %102 : tensor<2x1x1xf32>
    %104 = stablehlo.reshape %103 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %105 = stablehlo.broadcast_in_dim %104, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %106 = stablehlo.multiply %96, %105 : tensor<2x1x16xf32>
    %107 = stablehlo.multiply %97, %106 : tensor<2x1x16xf32>
    %108 = stablehlo.reshape %107 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %109 = stablehlo.transpose %arg22, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %110 = stablehlo.dot_general %108, %109, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %111 = stablehlo.reshape %110 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %112 = stablehlo.logistic %111 : tensor<2x1x32xf32>
    %113 = stablehlo.multiply %111, %112 : tensor<2x1x32xf32>
    %114 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %115 = stablehlo.dot_general %108, %114, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %116 = stablehlo.reshape %115 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %117 = stablehlo.multiply %113, %116 : tensor<2x1x32xf32>
    %118 = stablehlo.reshape %117 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %119 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %120 = stablehlo.dot_general %118, %119, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x32xf32>, tensor<32x16xf32>) -> tensor<2x16xf32>
    %121 = stablehlo.reshape %120 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %122 = stablehlo.add %96, %121 : tensor<2x1x16xf32>
    %123 = stablehlo.optimization_barrier %122 : tensor<2x1x16xf32>
    %124 = stablehlo.custom_call @LayoutConstraint(%123) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
    %125 = stablehlo.broadcast_in_dim %arg23, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %126 = stablehlo.power %124, %cst_4 : tensor<2x1x16xf32>
    %127 = stablehlo.reduce(%126 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %128 = stablehlo.multiply %127, %cst_3 : tensor<2x1xf32>
    %129 = stablehlo.reshape %128 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %130 = stablehlo.add %129, %9 : tensor<2x1x1xf32>
    %131 = stablehlo.rsqrt %130 : tensor<2x1x1xf32>
    %132 = stablehlo.reshape %131 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %133 = stablehlo.broadcast_in_dim %132, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %134 = stablehlo.multiply %124, %133 : tensor<2x1x16xf32>
    %135 = stablehlo.multiply %125, %134 : tensor<2x1x16xf32>
    %136 = stablehlo.reshape %135 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %137 = stablehlo.transpose %arg28, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %138 = stablehlo.dot_general %136, %137, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %139 = stablehlo.reshape %138 : (tensor<2x16xf32>) -> tensor<2x4x1x4xf32>
    %140 = stablehlo.multiply %139, %29 : tensor<2x4x1x4xf32>
    %141 = stablehlo.slice %139 [0:2, 0:4, 0:1, 2:4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %142 = stablehlo.negate %141 : tensor<2x4x1x2xf32>
    %143 = stablehlo.slice %139 [0:2, 0:4, 0:1, 0:2] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %144 = stablehlo.concatenate %142, %143, dim = 3 : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> tensor<2x4x1x4xf32>
    %145 = stablehlo.multiply %144, %37 : tensor<2x4x1x4xf32>
    %146 = stablehlo.add %140, %145 : tensor<2x4x1x4xf32>
    %147 = stablehlo.reshape %146 : (tensor<2x4x1x4xf32>) -> tensor<2x2x2x4xf32>
    %148 = stablehlo.multiply %147, %41 : tensor<2x2x2x4xf32>
    %149 = stablehlo.reshape %148 : (tensor<2x2x2x4xf32>) -> tensor<4x2x4xf32>
    %150 = stablehlo.reshape %arg24 : (tensor<i64>) -> tensor<1xi64>
    %151 = stablehlo.transpose %arg26, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %152 = stablehlo.dot_general %136, %151, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %153 = stablehlo.reshape %152 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %154 = stablehlo.multiply %153, %48 : tensor<2x2x1x4xf32>
    %155 = stablehlo.slice %153 [0:2, 0:2, 0:1, 2:4] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %156 = stablehlo.negate %155 : tensor<2x2x1x2xf32>
    %157 = stablehlo.slice %153 [0:2, 0:2, 0:1, 0:2] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %158 = stablehlo.concatenate %156, %157, dim = 3 : (tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>) -> tensor<2x2x1x4xf32>
    %159 = stablehlo.multiply %158, %54 : tensor<2x2x1x4xf32>
    %160 = stablehlo.add %154, %159 : tensor<2x2x1x4xf32>
    %161 = "stablehlo.scatter"(%arg27, %150, %160) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %162 = stablehlo.transpose %161, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,4,12]{2,3,1,0}"} : (tensor<2x2x12x4xf32>) -> tensor<2x2x4x12xf32>
    %163 = stablehlo.multiply %162, %59 : tensor<2x2x4x12xf32>
    %164 = stablehlo.reshape %163 : (tensor<2x2x4x12xf32>) -> tensor<4x4x12xf32>
    %165 = stablehlo.dot_general %149, %164, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x4xf32>, tensor<4x4x12xf32>) -> tensor<4x2x12xf32>
    %166 = stablehlo.reshape %165 : (tensor<4x2x12xf32>) -> tensor<2x2x2x12xf32>
    %167 = stablehlo.add %166, %72 : tensor<2x2x2x12xf32>
    %168 = stablehlo.compare  EQ, %167, %cst_0 : (tensor<2x2x2x12xf32>, tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xi1>
    %169 = stablehlo.reduce(%168 init: %c_6) across dimensions = [3] : (tensor<2x2x2x12xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg32: tensor<i1>, %arg33: tensor<i1>)  {
      %236 = stablehlo.and %arg32, %arg33 : tensor<i1>
      %237 = stablehlo.select %236, %c_6, %c_5 : tensor<i1>, tensor<i1>
      stablehlo.return %237 : tensor<i1>
    }
    %170 = stablehlo.broadcast_in_dim %169, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x12xi1>
    %171 = stablehlo.reduce(%167 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %172 = stablehlo.broadcast_in_dim %171, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %173 = stablehlo.subtract %167, %172 : tensor<2x2x2x12xf32>
    %174 = stablehlo.exponential %173 : tensor<2x2x2x12xf32>
    %175 = stablehlo.reduce(%174 init: %cst_9) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x12xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %176 = stablehlo.broadcast_in_dim %175, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x12xf32>
    %177 = stablehlo.divide %174, %176 : tensor<2x2x2x12xf32>
    %178 = stablehlo.select %170, %cst, %177 : tensor<2x2x2x12xi1>, tensor<2x2x2x12xf32>
    %179 = stablehlo.reshape %178 : (tensor<2x2x2x12xf32>) -> tensor<4x2x12xf32>
    %180 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %181 = stablehlo.dot_general %136, %180, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %182 = stablehlo.reshape %181 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %183 = "stablehlo.scatter"(%arg25, %150, %182) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x12x4xf32>
    %184 = stablehlo.reshape %183 : (tensor<2x2x12x4xf32>) -> tensor<4x12x4xf32>
    %185 = stablehlo.dot_general %179, %184, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x12xf32>, tensor<4x12x4xf32>) -> tensor<4x2x4xf32>
    %186 = stablehlo.reshape %185 : (tensor<4x2x4xf32>) -> tensor<2x16xf32>
    %187 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %188 = stablehlo.dot_general %186, %187, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %189 = stablehlo.reshape %188 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %190 = stablehlo.add %124, %189 : tensor<2x1x16xf32>
    %191 = stablehlo.broadcast_in_dim %arg29, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %192 = stablehlo.power %190, %cst_4 : tensor<2x1x16xf32>
    %193 = stablehlo.reduce(%192 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %194 = stablehlo.multiply %193, %cst_3 : tensor<2x1xf32>
    %195 = stablehlo.reshape %194 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %196 = stablehlo.add %195, %9 : tensor<2x1x1xf32>
    %197 = stablehlo.rsqrt %196 : tensor<2x1x1xf32>
    %198 = stablehlo.reshape %197 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %199 = stablehlo.broadcast_in_dim %198, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %200 = stablehlo.multiply %190, %199 : tensor<2x1x16xf32>
    %201 = stablehlo.multiply %191, %200 : tensor<2x1x16xf32>
    %202 = stablehlo.reshape %201 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %203 = stablehlo.transpose %arg30, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %204 = stablehlo.dot_general %202, %203, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %205 = stablehlo.reshape %204 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %206 = stablehlo.logistic %205 : tensor<2x1x32xf32>
    %207 = stablehlo.multiply %205, %206 : tensor<2x1x32xf32>
    %208 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %209 = stablehlo.dot_general %202, %208, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %210 = stablehlo.reshape %209 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %211 = stablehlo.multiply %207, %210 : tensor<2x1x32xf32>
    %212 = stablehlo.reshape %211 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %213 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %214 = stablehlo.dot_general %212, %213, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x32xf32>, tensor<32x16xf32>) -> tensor<2x16xf32>
    %215 = stablehlo.reshape %214 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %216 = stablehlo.add %190, %215 : tensor<2x1x16xf32>
    %217 = stablehlo.power %216, %cst_4 : tensor<2x1x16xf32>
    %218 = stablehlo.reduce(%217 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %219 = stablehlo.multiply %218, %cst_3 : tensor<2x1xf32>
    %220 = stablehlo.reshape %219 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %221 = stablehlo.add %220, %9 : tensor<2x1x1xf32>
    %222 = stablehlo.rsqrt %221 : tensor<2x1x1xf32>
    %223 = stablehlo.reshape %222 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %224 = stablehlo.broadcast_in_dim %223, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %225 = stablehlo.multiply %216, %224 : tensor<2x1x16xf32>
    %226 = stablehlo.multiply %0, %225 : tensor<2x1x16xf32>
    %227 = stablehlo.reshape %226 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %228 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %229 = stablehlo.dot_general %227, %228, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x48xf32>) -> tensor<2x48xf32>
    %230 = stablehlo.iota dim = 0 : tensor<48xi32>
    %231 = stablehlo.broadcast_in_dim %230, dims = [1] : (tensor<48xi32>) -> tensor<2x48xi32>
    %232:2 = stablehlo.reduce(%229 init: %cst_7), (%231 init: %c_8) across dimensions = [1] : (tensor<2x48xf32>, tensor<2x48xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
     reducer(%arg32: tensor<f32>, %arg34: tensor<f32>) (%arg33: tensor<i32>, %arg35: tensor<i32>)  {
      %236 = stablehlo.compare  GE, %arg32, %arg34 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %237 = stablehlo.select %236, %arg32, %arg34 : tensor<i1>, tensor<f32>
      %238 = stablehlo.compare  EQ, %arg32, %arg34 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %239 = stablehlo.minimum %arg33, %arg35 : tensor<i32>
      %240 = stablehlo.select %236, %arg33, %arg35 : tensor<i1>, tensor<i32>
      %241 = stablehlo.select %238, %239, %240 : tensor<i1>, tensor<i32>
      stablehlo.return %237, %241 : tensor<f32>, tensor<i32>
    }
    %233 = stablehlo.convert %232#1 : (tensor<2xi32>) -> tensor<2xi64>
    %234 = stablehlo.add %arg13, %c : tensor<i64>
    %235 = stablehlo.add %arg24, %c : tensor<i64>
    return %233, %57, %89, %161, %183, %234, %235 : tensor<2xi64>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>
  }
}
