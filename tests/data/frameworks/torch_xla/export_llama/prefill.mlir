module @IrToHlo.650 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<48x16xf32> loc("lm_head.weight"), %arg1: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg2: tensor<16x32xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg3: tensor<32x16xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg4: tensor<16x16xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg5: tensor<8x16xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg6: tensor<16x32xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg7: tensor<32x16xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg8: tensor<16x16xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg9: tensor<8x16xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg10: tensor<2x5xi64> loc("prompt"), %arg11: tensor<48x16xf32> loc("model.embed_tokens.weight"), %arg12: tensor<16xf32> loc("model.layers.0.input_layernorm.weight"), %arg13: tensor<f32> loc("lifted.float32[-inf]"), %arg14: tensor<f32> loc("lifted.float32[0.7071067690849304]"), %arg15: tensor<2xf32> loc("model.rotary_emb.inv_freq"), %arg16: tensor<8x16xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg17: tensor<16x16xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg18: tensor<16xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg19: tensor<32x16xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg20: tensor<16xf32> loc("model.layers.1.input_layernorm.weight"), %arg21: tensor<8x16xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg22: tensor<16x16xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg23: tensor<16xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg24: tensor<32x16xf32> loc("model.layers.1.mlp.gate_proj.weight"), %arg25: tensor<16xf32> loc("model.norm.weight"), %arg26: tensor<i64> loc("lifted.int64[5]")) -> (tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4x5x5xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<2x4x5x5xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<5x5xf32>
    %c = stablehlo.constant dense<false> : tensor<5x5xi1>
    %c_2 = stablehlo.constant dense<true> : tensor<5x5xi1>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x12x4xf32>
    %cst_4 = stablehlo.constant dense<[[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]> : tensor<1x5xf32>
    %cst_5 = stablehlo.constant dense<6.250000e-02> : tensor<2x5xf32>
    %cst_6 = stablehlo.constant dense<2.000000e+00> : tensor<2x5x16xf32>
    %cst_7 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_8 = stablehlo.constant dense<false> : tensor<i1>
    %c_9 = stablehlo.constant dense<true> : tensor<i1>
    %c_10 = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg25, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %1 = stablehlo.reshape %arg10 : (tensor<2x5xi64>) -> tensor<10xi64>
    %2 = stablehlo.convert %1 : (tensor<10xi64>) -> tensor<10xui32>
    %3 = "stablehlo.gather"(%arg11, %2) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<10xui32>) -> tensor<10x16xf32>
    %4 = stablehlo.reshape %3 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %5 = stablehlo.broadcast_in_dim %arg12, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %6 = stablehlo.power %4, %cst_6 : tensor<2x5x16xf32>
    %7 = stablehlo.reduce(%6 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %8 = stablehlo.multiply %7, %cst_5 : tensor<2x5xf32>
    %9 = stablehlo.reshape %8 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %10 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %11 = stablehlo.add %9, %10 : tensor<2x5x1xf32>
    %12 = stablehlo.rsqrt %11 : tensor<2x5x1xf32>
    %13 = stablehlo.reshape %12 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %15 = stablehlo.multiply %4, %14 : tensor<2x5x16xf32>
    %16 = stablehlo.multiply %5, %15 : tensor<2x5x16xf32>
    %17 = stablehlo.reshape %16 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %18 = stablehlo.transpose %arg17, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %19 = stablehlo.dot_general %17, %18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %20 = stablehlo.reshape %19 : (tensor<10x16xf32>) -> tensor<2x5x4x4xf32>
    %21 = stablehlo.transpose %20, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,5,4]{3,1,2,0}"} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
    %22 = stablehlo.broadcast_in_dim %cst_4, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<1x5x2xf32>
    %23 = stablehlo.broadcast_in_dim %arg15, dims = [2] : (tensor<2xf32>) -> tensor<1x5x2xf32>
    %24 = stablehlo.multiply %22, %23 : tensor<1x5x2xf32>
    %25 = stablehlo.concatenate %24, %24, dim = 2 : (tensor<1x5x2xf32>, tensor<1x5x2xf32>) -> tensor<1x5x4xf32>
    %26 = stablehlo.cosine %25 : tensor<1x5x4xf32>
    %27 = stablehlo.reshape %26 : (tensor<1x5x4xf32>) -> tensor<5x4xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x4x5x4xf32>
    %29 = stablehlo.multiply %21, %28 : tensor<2x4x5x4xf32>
    %30 = stablehlo.slice %21 [0:2, 0:4, 0:5, 2:4] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %31 = stablehlo.negate %30 : tensor<2x4x5x2xf32>
    %32 = stablehlo.slice %21 [0:2, 0:4, 0:5, 0:2] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %33 = stablehlo.concatenate %31, %32, dim = 3 : (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) -> tensor<2x4x5x4xf32>
    %34 = stablehlo.sine %25 : tensor<1x5x4xf32>
    %35 = stablehlo.reshape %34 : (tensor<1x5x4xf32>) -> tensor<5x4xf32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x4x5x4xf32>
    %37 = stablehlo.multiply %33, %36 : tensor<2x4x5x4xf32>
    %38 = stablehlo.add %29, %37 : tensor<2x4x5x4xf32>
    %39 = stablehlo.broadcast_in_dim %arg14, dims = [] : (tensor<f32>) -> tensor<2x4x5x4xf32>
    %40 = stablehlo.multiply %38, %39 : tensor<2x4x5x4xf32>
    %41 = stablehlo.reshape %40 : (tensor<2x4x5x4xf32>) -> tensor<8x5x4xf32>
    %42 = stablehlo.transpose %arg16, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %43 = stablehlo.dot_general %17, %42, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %44 = stablehlo.reshape %43 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %45 = stablehlo.transpose %44, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %46 = stablehlo.broadcast_in_dim %27, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x2x5x4xf32>
    %47 = stablehlo.multiply %45, %46 : tensor<2x2x5x4xf32>
    %48 = stablehlo.slice %45 [0:2, 0:2, 0:5, 2:4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %49 = stablehlo.negate %48 : tensor<2x2x5x2xf32>
    %50 = stablehlo.slice %45 [0:2, 0:2, 0:5, 0:2] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %51 = stablehlo.concatenate %49, %50, dim = 3 : (tensor<2x2x5x2xf32>, tensor<2x2x5x2xf32>) -> tensor<2x2x5x4xf32>
    %52 = stablehlo.broadcast_in_dim %35, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x2x5x4xf32>
    %53 = stablehlo.multiply %51, %52 : tensor<2x2x5x4xf32>
    %54 = stablehlo.add %47, %53 : tensor<2x2x5x4xf32>
    %55 = "stablehlo.scatter"(%cst_3, %c_10, %54) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      stablehlo.return %arg28 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %56 = stablehlo.slice %55 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %57 = stablehlo.broadcast_in_dim %56, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %58 = stablehlo.reshape %57 : (tensor<2x2x2x5x4xf32>) -> tensor<2x4x5x4xf32>
    %59 = stablehlo.transpose %58, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,4,5]{2,3,1,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x4x4x5xf32>
    %60 = stablehlo.broadcast_in_dim %arg14, dims = [] : (tensor<f32>) -> tensor<2x4x4x5xf32>
    %61 = stablehlo.multiply %59, %60 : tensor<2x4x4x5xf32>
    %62 = stablehlo.reshape %61 : (tensor<2x4x4x5xf32>) -> tensor<8x4x5xf32>
    %63 = stablehlo.dot_general %41, %62, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x5xf32>) -> tensor<8x5x5xf32>
    %64 = stablehlo.reshape %63 : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %65 = stablehlo.iota dim = 0 : tensor<5xi32>
    %66 = stablehlo.broadcast_in_dim %65, dims = [0] : (tensor<5xi32>) -> tensor<5x5xi32>
    %67 = stablehlo.broadcast_in_dim %65, dims = [1] : (tensor<5xi32>) -> tensor<5x5xi32>
    %68 = stablehlo.compare  GE, %66, %67 : (tensor<5x5xi32>, tensor<5x5xi32>) -> tensor<5x5xi1>
    %69 = stablehlo.select %68, %c_2, %c : tensor<5x5xi1>, tensor<5x5xi1>
    %70 = stablehlo.broadcast_in_dim %arg13, dims = [] : (tensor<f32>) -> tensor<5x5xf32>
    %71 = stablehlo.select %69, %cst_1, %70 : tensor<5x5xi1>, tensor<5x5xf32>
    %72 = stablehlo.broadcast_in_dim %71, dims = [2, 3] : (tensor<5x5xf32>) -> tensor<2x4x5x5xf32>
    %73 = stablehlo.add %64, %72 : tensor<2x4x5x5xf32>
    %74 = stablehlo.compare  EQ, %73, %cst_0 : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xi1>
    %75 = stablehlo.reduce(%74 init: %c_9) across dimensions = [3] : (tensor<2x4x5x5xi1>, tensor<i1>) -> tensor<2x4x5xi1>
     reducer(%arg27: tensor<i1>, %arg28: tensor<i1>)  {
      %246 = stablehlo.and %arg27, %arg28 : tensor<i1>
      %247 = stablehlo.select %246, %c_9, %c_8 : tensor<i1>, tensor<i1>
      stablehlo.return %247 : tensor<i1>
    }
    %76 = stablehlo.broadcast_in_dim %75, dims = [0, 1, 2] : (tensor<2x4x5xi1>) -> tensor<2x4x5x5xi1>
    %77 = stablehlo.reduce(%73 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %79 = stablehlo.subtract %73, %78 : tensor<2x4x5x5xf32>
    %80 = stablehlo.exponential %79 : tensor<2x4x5x5xf32>
    %81 = stablehlo.reduce(%80 init: %cst_11) applies stablehlo.add across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %82 = stablehlo.broadcast_in_dim %81, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %83 = stablehlo.divide %80, %82 : tensor<2x4x5x5xf32>
    %84 = stablehlo.select %76, %cst, %83 : tensor<2x4x5x5xi1>, tensor<2x4x5x5xf32>
    %85 = stablehlo.reshape %84 : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %86 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %87 = stablehlo.dot_general %17, %86, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %88 = stablehlo.reshape %87 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %89 = stablehlo.transpose %88, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %90 = "stablehlo.scatter"(%cst_3, %c_10, %89) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      stablehlo.return %arg28 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %91 = stablehlo.slice %90 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %92 = stablehlo.broadcast_in_dim %91, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %93 = stablehlo.reshape %92 : (tensor<2x2x2x5x4xf32>) -> tensor<8x5x4xf32>
    %94 = stablehlo.dot_general %85, %93, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x5xf32>, tensor<8x5x4xf32>) -> tensor<8x5x4xf32>
    %95 = stablehlo.reshape %94 : (tensor<8x5x4xf32>) -> tensor<2x4x5x4xf32>
    %96 = stablehlo.transpose %95, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,4,4]{3,1,2,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x5x4x4xf32>
    %97 = stablehlo.reshape %96 : (tensor<2x5x4x4xf32>) -> tensor<10x16xf32>
    %98 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %99 = stablehlo.dot_general %97, %98, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %100 = stablehlo.reshape %99 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %101 = stablehlo.add %4, %100 : tensor<2x5x16xf32>
    %102 = stablehlo.broadcast_in_dim %arg18, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %103 = stablehlo.power %101, %cst_6 : tensor<2x5x16xf32>
    %104 = stablehlo.reduce(%103 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %105 = stablehlo.multiply %104, %cst_5 : tensor<2x5xf32>
    %106 = stablehlo.reshape %105 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %107 = stablehlo.add %106, %10 : tensor<2x5x1xf32>
    %108 = stablehlo.rsqrt %107 : tensor<2x5x1xf32>
    %109 = stablehlo.reshape %108 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %110 = stablehlo.broadcast_in_dim %109, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %111 = stablehlo.multiply %101, %110 : tensor<2x5x16xf32>
    %112 = stablehlo.multiply %102, %111 : tensor<2x5x16xf32>
    %113 = stablehlo.reshape %112 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %114 = stablehlo.transpose %arg19, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %115 = stablehlo.dot_general %113, %114, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %116 = stablehlo.reshape %115 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %117 = stablehlo.logistic %116 : tensor<2x5x32xf32>
    %118 = stablehlo.multiply %116, %117 : tensor<2x5x32xf32>
    %119 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %120 = stablehlo.dot_general %113, %119, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %121 = stablehlo.reshape %120 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %122 = stablehlo.multiply %118, %121 : tensor<2x5x32xf32>
    %123 = stablehlo.reshape %122 : (tensor<2x5x32xf32>) -> tensor<10x32xf32>
    %124 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %125 = stablehlo.dot_general %123, %124, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x32xf32>, tensor<32x16xf32>) -> tensor<10x16xf32>
    %126 = stablehlo.reshape %125 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %127 = stablehlo.add %101, %126 : tensor<2x5x16xf32>
    %128 = stablehlo.optimization_barrier %127 : tensor<2x5x16xf32>
    %129 = stablehlo.custom_call @LayoutConstraint(%128) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
    %130 = stablehlo.broadcast_in_dim %arg20, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %131 = stablehlo.power %129, %cst_6 : tensor<2x5x16xf32>
    %132 = stablehlo.reduce(%131 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %133 = stablehlo.multiply %132, %cst_5 : tensor<2x5xf32>
    %134 = stablehlo.reshape %133 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %135 = stablehlo.add %134, %10 : tensor<2x5x1xf32>
    %136 = stablehlo.rsqrt %135 : tensor<2x5x1xf32>
    %137 = stablehlo.reshape %136 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %138 = stablehlo.broadcast_in_dim %137, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %139 = stablehlo.multiply %129, %138 : tensor<2x5x16xf32>
    %140 = stablehlo.multiply %130, %139 : tensor<2x5x16xf32>
    %141 = stablehlo.reshape %140 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %142 = stablehlo.transpose %arg22, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %143 = stablehlo.dot_general %141, %142, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %144 = stablehlo.reshape %143 : (tensor<10x16xf32>) -> tensor<2x5x4x4xf32>
    %145 = stablehlo.transpose %144, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,5,4]{3,1,2,0}"} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
    %146 = stablehlo.multiply %145, %28 : tensor<2x4x5x4xf32>
    %147 = stablehlo.slice %145 [0:2, 0:4, 0:5, 2:4] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %148 = stablehlo.negate %147 : tensor<2x4x5x2xf32>
    %149 = stablehlo.slice %145 [0:2, 0:4, 0:5, 0:2] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %150 = stablehlo.concatenate %148, %149, dim = 3 : (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) -> tensor<2x4x5x4xf32>
    %151 = stablehlo.multiply %150, %36 : tensor<2x4x5x4xf32>
    %152 = stablehlo.add %146, %151 : tensor<2x4x5x4xf32>
    %153 = stablehlo.multiply %152, %39 : tensor<2x4x5x4xf32>
    %154 = stablehlo.reshape %153 : (tensor<2x4x5x4xf32>) -> tensor<8x5x4xf32>
    %155 = stablehlo.transpose %arg21, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %156 = stablehlo.dot_general %141, %155, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %157 = stablehlo.reshape %156 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %158 = stablehlo.transpose %157, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %159 = stablehlo.multiply %158, %46 : tensor<2x2x5x4xf32>
    %160 = stablehlo.slice %158 [0:2, 0:2, 0:5, 2:4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %161 = stablehlo.negate %160 : tensor<2x2x5x2xf32>
    %162 = stablehlo.slice %158 [0:2, 0:2, 0:5, 0:2] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %163 = stablehlo.concatenate %161, %162, dim = 3 : (tensor<2x2x5x2xf32>, tensor<2x2x5x2xf32>) -> tensor<2x2x5x4xf32>
    %164 = stablehlo.multiply %163, %52 : tensor<2x2x5x4xf32>
    %165 = stablehlo.add %159, %164 : tensor<2x2x5x4xf32>
    %166 = "stablehlo.scatter"(%cst_3, %c_10, %165) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      stablehlo.return %arg28 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %167 = stablehlo.slice %166 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %168 = stablehlo.broadcast_in_dim %167, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %169 = stablehlo.reshape %168 : (tensor<2x2x2x5x4xf32>) -> tensor<2x4x5x4xf32>
    %170 = stablehlo.transpose %169, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,4,5]{2,3,1,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x4x4x5xf32>
    %171 = stablehlo.multiply %170, %60 : tensor<2x4x4x5xf32>
    %172 = stablehlo.reshape %171 : (tensor<2x4x4x5xf32>) -> tensor<8x4x5xf32>
    %173 = stablehlo.dot_general %154, %172, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x5xf32>) -> tensor<8x5x5xf32>
    %174 = stablehlo.reshape %173 : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %175 = stablehlo.add %174, %72 : tensor<2x4x5x5xf32>
    %176 = stablehlo.compare  EQ, %175, %cst_0 : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xi1>
    %177 = stablehlo.reduce(%176 init: %c_9) across dimensions = [3] : (tensor<2x4x5x5xi1>, tensor<i1>) -> tensor<2x4x5xi1>
     reducer(%arg27: tensor<i1>, %arg28: tensor<i1>)  {
      %246 = stablehlo.and %arg27, %arg28 : tensor<i1>
      %247 = stablehlo.select %246, %c_9, %c_8 : tensor<i1>, tensor<i1>
      stablehlo.return %247 : tensor<i1>
    }
    %178 = stablehlo.broadcast_in_dim %177, dims = [0, 1, 2] : (tensor<2x4x5xi1>) -> tensor<2x4x5x5xi1>
    %179 = stablehlo.reduce(%175 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %180 = stablehlo.broadcast_in_dim %179, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %181 = stablehlo.subtract %175, %180 : tensor<2x4x5x5xf32>
    %182 = stablehlo.exponential %181 : tensor<2x4x5x5xf32>
    %183 = stablehlo.reduce(%182 init: %cst_11) applies stablehlo.add across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %184 = stablehlo.broadcast_in_dim %183, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %185 = stablehlo.divide %182, %184 : tensor<2x4x5x5xf32>
    %186 = stablehlo.select %178, %cst, %185 : tensor<2x4x5x5xi1>, tensor<2x4x5x5xf32>
    %187 = stablehlo.reshape %186 : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %188 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %189 = stablehlo.dot_general %141, %188, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %190 = stablehlo.reshape %189 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %191 = stablehlo.transpose %190, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %192 = "stablehlo.scatter"(%cst_3, %c_10, %191) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      stablehlo.return %arg28 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %193 = stablehlo.slice %192 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %194 = stablehlo.broadcast_in_dim %193, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %195 = stablehlo.reshape %194 : (tensor<2x2x2x5x4xf32>) -> tensor<8x5x4xf32>
    %196 = stablehlo.dot_general %187, %195, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x5xf32>, tensor<8x5x4xf32>) -> tensor<8x5x4xf32>
    %197 = stablehlo.reshape %196 : (tensor<8x5x4xf32>) -> tensor<2x4x5x4xf32>
    %198 = stablehlo.transpose %197, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,4,4]{3,1,2,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x5x4x4xf32>
    %199 = stablehlo.reshape %198 : (tensor<2x5x4x4xf32>) -> tensor<10x16xf32>
    %200 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %201 = stablehlo.dot_general %199, %200, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %202 = stablehlo.reshape %201 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %203 = stablehlo.add %129, %202 : tensor<2x5x16xf32>
    %204 = stablehlo.broadcast_in_dim %arg23, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %205 = stablehlo.power %203, %cst_6 : tensor<2x5x16xf32>
    %206 = stablehlo.reduce(%205 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %207 = stablehlo.multiply %206, %cst_5 : tensor<2x5xf32>
    %208 = stablehlo.reshape %207 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %209 = stablehlo.add %208, %10 : tensor<2x5x1xf32>
    %210 = stablehlo.rsqrt %209 : tensor<2x5x1xf32>
    %211 = stablehlo.reshape %210 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %212 = stablehlo.broadcast_in_dim %211, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %213 = stablehlo.multiply %203, %212 : tensor<2x5x16xf32>
    %214 = stablehlo.multiply %204, %213 : tensor<2x5x16xf32>
    %215 = stablehlo.reshape %214 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %216 = stablehlo.transpose %arg24, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %217 = stablehlo.dot_general %215, %216, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %218 = stablehlo.reshape %217 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %219 = stablehlo.logistic %218 : tensor<2x5x32xf32>
    %220 = stablehlo.multiply %218, %219 : tensor<2x5x32xf32>
    %221 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %222 = stablehlo.dot_general %215, %221, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %223 = stablehlo.reshape %222 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %224 = stablehlo.multiply %220, %223 : tensor<2x5x32xf32>
    %225 = stablehlo.reshape %224 : (tensor<2x5x32xf32>) -> tensor<10x32xf32>
    %226 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %227 = stablehlo.dot_general %225, %226, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x32xf32>, tensor<32x16xf32>) -> tensor<10x16xf32>
    %228 = stablehlo.reshape %227 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %229 = stablehlo.add %203, %228 : tensor<2x5x16xf32>
    %230 = stablehlo.power %229, %cst_6 : tensor<2x5x16xf32>
    %231 = stablehlo.reduce(%230 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %232 = stablehlo.multiply %231, %cst_5 : tensor<2x5xf32>
    %233 = stablehlo.reshape %232 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %234 = stablehlo.add %233, %10 : tensor<2x5x1xf32>
    %235 = stablehlo.rsqrt %234 : tensor<2x5x1xf32>
    %236 = stablehlo.reshape %235 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %237 = stablehlo.broadcast_in_dim %236, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %238 = stablehlo.multiply %229, %237 : tensor<2x5x16xf32>
    %239 = stablehlo.multiply %0, %238 : tensor<2x5x16xf32>
    %240 = stablehlo.reshape %239 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %241 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %242 = stablehlo.dot_general %240, %241, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x48xf32>) -> tensor<10x48xf32>
    %243 = stablehlo.reshape %242 : (tensor<10x48xf32>) -> tensor<2x5x48xf32>
    %244 = stablehlo.slice %243 [0:2, 4:5, 0:48] : (tensor<2x5x48xf32>) -> tensor<2x1x48xf32>
    %245 = stablehlo.reshape %244 : (tensor<2x1x48xf32>) -> tensor<2x48xf32>
    return %245, %55, %90, %166, %192, %arg26, %arg26 : tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>
  }
}
