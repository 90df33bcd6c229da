module @IrToHlo.686 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<48x16xf32> loc("lm_head.weight"), %arg1: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg2: tensor<16x32xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg3: tensor<32x16xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg4: tensor<16x16xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg5: tensor<8xf32> loc("model.layers.1.self_attn.v_proj.bias"), %arg6: tensor<8x16xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg7: tensor<16x32xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg8: tensor<32x16xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg9: tensor<16x16xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg10: tensor<8xf32> loc("model.layers.0.self_attn.v_proj.bias"), %arg11: tensor<8x16xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg12: tensor<2x5xi64> loc("prompt"), %arg13: tensor<48x16xf32> loc("model.embed_tokens.weight"), %arg14: tensor<16xf32> loc("model.layers.0.input_layernorm.weight"), %arg15: tensor<f32> loc("lifted.float32[-inf]"), %arg16: tensor<f32> loc("lifted.float32[0.7071067690849304]"), %arg17: tensor<2xf32> loc("model.rotary_emb.inv_freq"), %arg18: tensor<8xf32> loc("model.layers.0.self_attn.k_proj.bias"), %arg19: tensor<8x16xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg20: tensor<16xf32> loc("model.layers.0.self_attn.q_proj.bias"), %arg21: tensor<16x16xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg22: tensor<16xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg23: tensor<32x16xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg24: tensor<16xf32> loc("model.layers.1.input_layernorm.weight"), %arg25: tensor<8xf32> loc("model.layers.1.self_attn.k_proj.bias"), %arg26: tensor<8x16xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg27: tensor<16xf32> loc("model.layers.1.self_attn.q_proj.bias"), %arg28: tensor<16x16xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg29: tensor<16xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg30: tensor<32x16xf32> loc("model.layers.1.mlp.gate_proj.weight"), %arg31: tensor<16xf32> loc("model.norm.weight"), %arg32: tensor<i64> loc("lifted.int64[5]")) -> (tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>) {
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
    %0 = stablehlo.broadcast_in_dim %arg31, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %1 = stablehlo.reshape %arg12 : (tensor<2x5xi64>) -> tensor<10xi64>
    %2 = stablehlo.convert %1 : (tensor<10xi64>) -> tensor<10xui32>
    %3 = "stablehlo.gather"(%arg13, %2) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<10xui32>) -> tensor<10x16xf32>
    %4 = stablehlo.reshape %3 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %5 = stablehlo.broadcast_in_dim %arg14, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
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
    %18 = stablehlo.transpose %arg21, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %19 = stablehlo.dot_general %17, %18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %20 = stablehlo.reshape %19 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %21 = stablehlo.broadcast_in_dim %arg20, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %22 = stablehlo.add %20, %21 : tensor<2x5x16xf32>
    %23 = stablehlo.reshape %22 : (tensor<2x5x16xf32>) -> tensor<2x5x4x4xf32>
    %24 = stablehlo.transpose %23, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,5,4]{3,1,2,0}"} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
    %25 = stablehlo.broadcast_in_dim %cst_4, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<1x5x2xf32>
    %26 = stablehlo.broadcast_in_dim %arg17, dims = [2] : (tensor<2xf32>) -> tensor<1x5x2xf32>
    %27 = stablehlo.multiply %25, %26 : tensor<1x5x2xf32>
    %28 = stablehlo.concatenate %27, %27, dim = 2 : (tensor<1x5x2xf32>, tensor<1x5x2xf32>) -> tensor<1x5x4xf32>
    %29 = stablehlo.cosine %28 : tensor<1x5x4xf32>
    %30 = stablehlo.reshape %29 : (tensor<1x5x4xf32>) -> tensor<5x4xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x4x5x4xf32>
    %32 = stablehlo.multiply %24, %31 : tensor<2x4x5x4xf32>
    %33 = stablehlo.slice %24 [0:2, 0:4, 0:5, 2:4] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %34 = stablehlo.negate %33 : tensor<2x4x5x2xf32>
    %35 = stablehlo.slice %24 [0:2, 0:4, 0:5, 0:2] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %36 = stablehlo.concatenate %34, %35, dim = 3 : (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) -> tensor<2x4x5x4xf32>
    %37 = stablehlo.sine %28 : tensor<1x5x4xf32>
    %38 = stablehlo.reshape %37 : (tensor<1x5x4xf32>) -> tensor<5x4xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x4x5x4xf32>
    %40 = stablehlo.multiply %36, %39 : tensor<2x4x5x4xf32>
    %41 = stablehlo.add %32, %40 : tensor<2x4x5x4xf32>
    %42 = stablehlo.broadcast_in_dim %arg16, dims = [] : (tensor<f32>) -> tensor<2x4x5x4xf32>
    %43 = stablehlo.multiply %41, %42 : tensor<2x4x5x4xf32>
    %44 = stablehlo.reshape %43 : (tensor<2x4x5x4xf32>) -> tensor<8x5x4xf32>
    %45 = stablehlo.transpose %arg19, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %46 = stablehlo.dot_general %17, %45, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %47 = stablehlo.reshape %46 : (tensor<10x8xf32>) -> tensor<2x5x8xf32>
    %48 = stablehlo.broadcast_in_dim %arg18, dims = [2] : (tensor<8xf32>) -> tensor<2x5x8xf32>
    %49 = stablehlo.add %47, %48 : tensor<2x5x8xf32>
    %50 = stablehlo.reshape %49 : (tensor<2x5x8xf32>) -> tensor<2x5x2x4xf32>
    %51 = stablehlo.transpose %50, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %52 = stablehlo.broadcast_in_dim %30, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x2x5x4xf32>
    %53 = stablehlo.multiply %51, %52 : tensor<2x2x5x4xf32>
    %54 = stablehlo.slice %51 [0:2, 0:2, 0:5, 2:4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %55 = stablehlo.negate %54 : tensor<2x2x5x2xf32>
    %56 = stablehlo.slice %51 [0:2, 0:2, 0:5, 0:2] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %57 = stablehlo.concatenate %55, %56, dim = 3 : (tensor<2x2x5x2xf32>, tensor<2x2x5x2xf32>) -> tensor<2x2x5x4xf32>
    %58 = stablehlo.broadcast_in_dim %38, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x2x5x4xf32>
    %59 = stablehlo.multiply %57, %58 : tensor<2x2x5x4xf32>
    %60 = stablehlo.add %53, %59 : tensor<2x2x5x4xf32>
    %61 = "stablehlo.scatter"(%cst_3, %c_10, %60) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %62 = stablehlo.slice %61 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %63 = stablehlo.broadcast_in_dim %62, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %64 = stablehlo.reshape %63 : (tensor<2x2x2x5x4xf32>) -> tensor<2x4x5x4xf32>
    %65 = stablehlo.transpose %64, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,4,5]{2,3,1,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x4x4x5xf32>
    %66 = stablehlo.broadcast_in_dim %arg16, dims = [] : (tensor<f32>) -> tensor<2x4x4x5xf32>
    %67 = stablehlo.multiply %65, %66 : tensor<2x4x4x5xf32>
    %68 = stablehlo.reshape %67 : (tensor<2x4x4x5xf32>) -> tensor<8x4x5xf32>
    %69 = stablehlo.dot_general %44, %68, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x5xf32>) -> tensor<8x5x5xf32>
    %70 = stablehlo.reshape %69 : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %71 = stablehlo.iota dim = 0 : tensor<5xi32>
    %72 = stablehlo.broadcast_in_dim %71, dims = [0] : (tensor<5xi32>) -> tensor<5x5xi32>
    %73 = stablehlo.broadcast_in_dim %71, dims = [1] : (tensor<5xi32>) -> tensor<5x5xi32>
    %74 = stablehlo.compare  GE, %72, %73 : (tensor<5x5xi32>, tensor<5x5xi32>) -> tensor<5x5xi1>
    %75 = stablehlo.select %74, %c_2, %c : tensor<5x5xi1>, tensor<5x5xi1>
    %76 = stablehlo.broadcast_in_dim %arg15, dims = [] : (tensor<f32>) -> tensor<5x5xf32>
    %77 = stablehlo.select %75, %cst_1, %76 : tensor<5x5xi1>, tensor<5x5xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [2, 3] : (tensor<5x5xf32>) -> tensor<2x4x5x5xf32>
    %79 = stablehlo.add %70, %78 : tensor<2x4x5x5xf32>
    %80 = stablehlo.compare  EQ, %79, %cst_0 : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xi1>
    %81 = stablehlo.reduce(%80 init: %c_9) across dimensions = [3] : (tensor<2x4x5x5xi1>, tensor<i1>) -> tensor<2x4x5xi1>
     reducer(%arg33: tensor<i1>, %arg34: tensor<i1>)  {
      %264 = stablehlo.and %arg33, %arg34 : tensor<i1>
      %265 = stablehlo.select %264, %c_9, %c_8 : tensor<i1>, tensor<i1>
      stablehlo.return %265 : tensor<i1>
    }
    %82 = stablehlo.broadcast_in_dim %81, dims = [0, 1, 2] : (tensor<2x4x5xi1>) -> tensor<2x4x5x5xi1>
    %83 = stablehlo.reduce(%79 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %84 = stablehlo.broadcast_in_dim %83, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %85 = stablehlo.subtract %79, %84 : tensor<2x4x5x5xf32>
    %86 = stablehlo.exponential %85 : tensor<2x4x5x5xf32>
    %87 = stablehlo.reduce(%86 init: %cst_11) applies stablehlo.add across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %88 = stablehlo.broadcast_in_dim %87, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %89 = stablehlo.divide %86, %88 : tensor<2x4x5x5xf32>
    %90 = stablehlo.select %82, %cst, %89 : tensor<2x4x5x5xi1>, tensor<2x4x5x5xf32>
    %91 = stablehlo.reshape %90 : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %92 = stablehlo.transpose %arg11, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %93 = stablehlo.dot_general %17, %92, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %94 = stablehlo.reshape %93 : (tensor<10x8xf32>) -> tensor<2x5x8xf32>
    %95 = stablehlo.broadcast_in_dim %arg10, dims = [2] : (tensor<8xf32>) -> tensor<2x5x8xf32>
    %96 = stablehlo.add %94, %95 : tensor<2x5x8xf32>
    %97 = stablehlo.reshape %96 : (tensor<2x5x8xf32>) -> tensor<2x5x2x4xf32>
    %98 = stablehlo.transpose %97, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %99 = "stablehlo.scatter"(%cst_3, %c_10, %98) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %100 = stablehlo.slice %99 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %101 = stablehlo.broadcast_in_dim %100, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %102 = stablehlo.reshape %101 : (tensor<2x2x2x5x4xf32>) -> tensor<8x5x4xf32>
    %103 = stablehlo.dot_general %91, %102, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x5xf32>, tensor<8x5x4xf32>) -> tensor<8x5x4xf32>
    %104 = stablehlo.reshape %103 : (tensor<8x5x4xf32>) -> tensor<2x4x5x4xf32>
    %105 = stablehlo.transpose %104, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,4,4]{3,1,2,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x5x4x4xf32>
    %106 = stablehlo.reshape %105 : (tensor<2x5x4x4xf32>) -> tensor<10x16xf32>
    %107 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %108 = stablehlo.dot_general %106, %107, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %109 = stablehlo.reshape %108 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %110 = stablehlo.add %4, %109 : tensor<2x5x16xf32>
    %111 = stablehlo.broadcast_in_dim %arg22, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %112 = stablehlo.power %110, %cst_6 : tensor<2x5x16xf32>
    %113 = stablehlo.reduce(%112 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %114 = stablehlo.multiply %113, %cst_5 : tensor<2x5xf32>
    %115 = stablehlo.reshape %114 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %116 = stablehlo.add %115, %10 : tensor<2x5x1xf32>
    %117 = stablehlo.rsqrt %116 : tensor<2x5x1xf32>
    %118 = stablehlo.reshape %117 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %119 = stablehlo.broadcast_in_dim %118, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %120 = stablehlo.multiply %110, %119 : tensor<2x5x16xf32>
    %121 = stablehlo.multiply %111, %120 : tensor<2x5x16xf32>
    %122 = stablehlo.reshape %121 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %123 = stablehlo.transpose %arg23, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %124 = stablehlo.dot_general %122, %123, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %125 = stablehlo.reshape %124 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %126 = stablehlo.logistic %125 : tensor<2x5x32xf32>
    %127 = stablehlo.multiply %125, %126 : tensor<2x5x32xf32>
    %128 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %129 = stablehlo.dot_general %122, %128, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %130 = stablehlo.reshape %129 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %131 = stablehlo.multiply %127, %130 : tensor<2x5x32xf32>
    %132 = stablehlo.reshape %131 : (tensor<2x5x32xf32>) -> tensor<10x32xf32>
    %133 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %134 = stablehlo.dot_general %132, %133, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x32xf32>, tensor<32x16xf32>) -> tensor<10x16xf32>
    %135 = stablehlo.reshape %134 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %136 = stablehlo.add %110, %135 : tensor<2x5x16xf32>
    %137 = stablehlo.optimization_barrier %136 : tensor<2x5x16xf32>
    %138 = stablehlo.custom_call @LayoutConstraint(%137) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
    %139 = stablehlo.broadcast_in_dim %arg24, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %140 = stablehlo.power %138, %cst_6 : tensor<2x5x16xf32>
    %141 = stablehlo.reduce(%140 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %142 = stablehlo.multiply %141, %cst_5 : tensor<2x5xf32>
    %143 = stablehlo.reshape %142 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %144 = stablehlo.add %143, %10 : tensor<2x5x1xf32>
    %145 = stablehlo.rsqrt %144 : tensor<2x5x1xf32>
    %146 = stablehlo.reshape %145 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %147 = stablehlo.broadcast_in_dim %146, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %148 = stablehlo.multiply %138, %147 : tensor<2x5x16xf32>
    %149 = stablehlo.multiply %139, %148 : tensor<2x5x16xf32>
    %150 = stablehlo.reshape %149 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %151 = stablehlo.transpose %arg28, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %152 = stablehlo.dot_general %150, %151, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %153 = stablehlo.reshape %152 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %154 = stablehlo.broadcast_in_dim %arg27, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %155 = stablehlo.add %153, %154 : tensor<2x5x16xf32>
    %156 = stablehlo.reshape %155 : (tensor<2x5x16xf32>) -> tensor<2x5x4x4xf32>
    %157 = stablehlo.transpose %156, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,5,4]{3,1,2,0}"} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
    %158 = stablehlo.multiply %157, %31 : tensor<2x4x5x4xf32>
    %159 = stablehlo.slice %157 [0:2, 0:4, 0:5, 2:4] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %160 = stablehlo.negate %159 : tensor<2x4x5x2xf32>
    %161 = stablehlo.slice %157 [0:2, 0:4, 0:5, 0:2] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %162 = stablehlo.concatenate %160, %161, dim = 3 : (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) -> tensor<2x4x5x4xf32>
    %163 = stablehlo.multiply %162, %39 : tensor<2x4x5x4xf32>
    %164 = stablehlo.add %158, %163 : tensor<2x4x5x4xf32>
    %165 = stablehlo.multiply %164, %42 : tensor<2x4x5x4xf32>
    %166 = stablehlo.reshape %165 : (tensor<2x4x5x4xf32>) -> tensor<8x5x4xf32>
    %167 = stablehlo.transpose %arg26, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %168 = stablehlo.dot_general %150, %167, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %169 = stablehlo.reshape %168 : (tensor<10x8xf32>) -> tensor<2x5x8xf32>
    %170 = stablehlo.broadcast_in_dim %arg25, dims = [2] : (tensor<8xf32>) -> tensor<2x5x8xf32>
    %171 = stablehlo.add %169, %170 : tensor<2x5x8xf32>
    %172 = stablehlo.reshape %171 : (tensor<2x5x8xf32>) -> tensor<2x5x2x4xf32>
    %173 = stablehlo.transpose %172, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %174 = stablehlo.multiply %173, %52 : tensor<2x2x5x4xf32>
    %175 = stablehlo.slice %173 [0:2, 0:2, 0:5, 2:4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %176 = stablehlo.negate %175 : tensor<2x2x5x2xf32>
    %177 = stablehlo.slice %173 [0:2, 0:2, 0:5, 0:2] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %178 = stablehlo.concatenate %176, %177, dim = 3 : (tensor<2x2x5x2xf32>, tensor<2x2x5x2xf32>) -> tensor<2x2x5x4xf32>
    %179 = stablehlo.multiply %178, %58 : tensor<2x2x5x4xf32>
    %180 = stablehlo.add %174, %179 : tensor<2x2x5x4xf32>
    %181 = "stablehlo.scatter"(%cst_3, %c_10, %180) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %182 = stablehlo.slice %181 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %183 = stablehlo.broadcast_in_dim %182, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %184 = stablehlo.reshape %183 : (tensor<2x2x2x5x4xf32>) -> tensor<2x4x5x4xf32>
    %185 = stablehlo.transpose %184, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,4,5]{2,3,1,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x4x4x5xf32>
    %186 = stablehlo.multiply %185, %66 : tensor<2x4x4x5xf32>
    %187 = stablehlo.reshape %186 : (tensor<2x4x4x5xf32>) -> tensor<8x4x5xf32>
    %188 = stablehlo.dot_general %166, %187, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x5xf32>) -> tensor<8x5x5xf32>
    %189 = stablehlo.reshape %188 : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %190 = stablehlo.add %189, %78 : tensor<2x4x5x5xf32>
    %191 = stablehlo.compare  EQ, %190, %cst_0 : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xi1>
    %192 = stablehlo.reduce(%191 init: %c_9) across dimensions = [3] : (tensor<2x4x5x5xi1>, tensor<i1>) -> tensor<2x4x5xi1>
     reducer(%arg33: tensor<i1>, %arg34: tensor<i1>)  {
      %264 = stablehlo.and %arg33, %arg34 : tensor<i1>
      %265 = stablehlo.select %264, %c_9, %c_8 : tensor<i1>, tensor<i1>
      stablehlo.return %265 : tensor<i1>
    }
    %193 = stablehlo.broadcast_in_dim %192, dims = [0, 1, 2] : (tensor<2x4x5xi1>) -> tensor<2x4x5x5xi1>
    %194 = stablehlo.reduce(%190 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %195 = stablehlo.broadcast_in_dim %194, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %196 = stablehlo.subtract %190, %195 : tensor<2x4x5x5xf32>
    %197 = stablehlo.exponential %196 : tensor<2x4x5x5xf32>
    %198 = stablehlo.reduce(%197 init: %cst_11) applies stablehlo.add across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %199 = stablehlo.broadcast_in_dim %198, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %200 = stablehlo.divide %197, %199 : tensor<2x4x5x5xf32>
    %201 = stablehlo.select %193, %cst, %200 : tensor<2x4x5x5xi1>, tensor<2x4x5x5xf32>
    %202 = stablehlo.reshape %201 : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %203 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %204 = stablehlo.dot_general %150, %203, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %205 = stablehlo.reshape %204 : (tensor<10x8xf32>) -> tensor<2x5x8xf32>
    %206 = stablehlo.broadcast_in_dim %arg5, dims = [2] : (tensor<8xf32>) -> tensor<2x5x8xf32>
    %207 = stablehlo.add %205, %206 : tensor<2x5x8xf32>
    %208 = stablehlo.reshape %207 : (tensor<2x5x8xf32>) -> tensor<2x5x2x4xf32>
    %209 = stablehlo.transpose %208, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %210 = "stablehlo.scatter"(%cst_3, %c_10, %209) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %211 = stablehlo.slice %210 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %212 = stablehlo.broadcast_in_dim %211, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %213 = stablehlo.reshape %212 : (tensor<2x2x2x5x4xf32>) -> tensor<8x5x4xf32>
    %214 = stablehlo.dot_general %202, %213, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x5xf32>, tensor<8x5x4xf32>) -> tensor<8x5x4xf32>
    %215 = stablehlo.reshape %214 : (tensor<8x5x4xf32>) -> tensor<2x4x5x4xf32>
    %216 = stablehlo.transpose %215, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,4,4]{3,1,2,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x5x4x4xf32>
    %217 = stablehlo.reshape %216 : (tensor<2x5x4x4xf32>) -> tensor<10x16xf32>
    %218 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %219 = stablehlo.dot_general %217, %218, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %220 = stablehlo.reshape %219 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %221 = stablehlo.add %138, %220 : tensor<2x5x16xf32>
    %222 = stablehlo.broadcast_in_dim %arg29, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %223 = stablehlo.power %221, %cst_6 : tensor<2x5x16xf32>
    %224 = stablehlo.reduce(%223 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %225 = stablehlo.multiply %224, %cst_5 : tensor<2x5xf32>
    %226 = stablehlo.reshape %225 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %227 = stablehlo.add %226, %10 : tensor<2x5x1xf32>
    %228 = stablehlo.rsqrt %227 : tensor<2x5x1xf32>
    %229 = stablehlo.reshape %228 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %230 = stablehlo.broadcast_in_dim %229, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %231 = stablehlo.multiply %221, %230 : tensor<2x5x16xf32>
    %232 = stablehlo.multiply %222, %231 : tensor<2x5x16xf32>
    %233 = stablehlo.reshape %232 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %234 = stablehlo.transpose %arg30, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %235 = stablehlo.dot_general %233, %234, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %236 = stablehlo.reshape %235 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %237 = stablehlo.logistic %236 : tensor<2x5x32xf32>
    %238 = stablehlo.multiply %236, %237 : tensor<2x5x32xf32>
    %239 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %240 = stablehlo.dot_general %233, %239, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %241 = stablehlo.reshape %240 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %242 = stablehlo.multiply %238, %241 : tensor<2x5x32xf32>
    %243 = stablehlo.reshape %242 : (tensor<2x5x32xf32>) -> tensor<10x32xf32>
    %244 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %245 = stablehlo.dot_general %243, %244, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x32xf32>, tensor<32x16xf32>) -> tensor<10x16xf32>
    %246 = stablehlo.reshape %245 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %247 = stablehlo.add %221, %246 : tensor<2x5x16xf32>
    %248 = stablehlo.power %247, %cst_6 : tensor<2x5x16xf32>
    %249 = stablehlo.reduce(%248 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %250 = stablehlo.multiply %249, %cst_5 : tensor<2x5xf32>
    %251 = stablehlo.reshape %250 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %252 = stablehlo.add %251, %10 : tensor<2x5x1xf32>
    %253 = stablehlo.rsqrt %252 : tensor<2x5x1xf32>
    %254 = stablehlo.reshape %253 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %255 = stablehlo.broadcast_in_dim %254, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %256 = stablehlo.multiply %247, %255 : tensor<2x5x16xf32>
    %257 = stablehlo.multiply %0, %256 : tensor<2x5x16xf32>
    %258 = stablehlo.reshape %257 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %259 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %260 = stablehlo.dot_general %258, %259, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x48xf32>) -> tensor<10x48xf32>
    %261 = stablehlo.reshape %260 : (tensor<10x48xf32>) -> tensor<2x5x48xf32>
    %262 = stablehlo.slice %261 [0:2, 4:5, 0:48] : (tensor<2x5x48xf32>) -> tensor<2x1x48xf32>
    %263 = stablehlo.reshape %262 : (tensor<2x1x48xf32>) -> tensor<2x48xf32>
    return %263, %61, %99, %181, %210, %arg32, %arg32 : tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>
  }
}
