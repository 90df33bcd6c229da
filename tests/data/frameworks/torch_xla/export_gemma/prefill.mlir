module @IrToHlo.709 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<48x16xf32> loc("model.embed_tokens.weight"), %arg1: tensor<16xf32> loc("model.norm.weight"), %arg2: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg3: tensor<16x32xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg4: tensor<32x16xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg5: tensor<16xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg6: tensor<16x16xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg7: tensor<8x16xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg8: tensor<16xf32> loc("model.layers.1.input_layernorm.weight"), %arg9: tensor<16x32xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg10: tensor<32x16xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg11: tensor<16xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg12: tensor<16x16xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg13: tensor<8x16xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg14: tensor<16xf32> loc("model.layers.0.input_layernorm.weight"), %arg15: tensor<f32> loc("model.embed_tokens.embed_scale"), %arg16: tensor<2x5xi64> loc("prompt"), %arg17: tensor<f32> loc("lifted.float32[-inf]"), %arg18: tensor<f32> loc("lifted.float32[0.7071067690849304]"), %arg19: tensor<2xf32> loc("model.rotary_emb.inv_freq"), %arg20: tensor<8x16xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg21: tensor<16x16xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg22: tensor<32x16xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg23: tensor<8x16xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg24: tensor<16x16xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg25: tensor<32x16xf32> loc("model.layers.1.mlp.gate_proj.weight"), %arg26: tensor<i64> loc("lifted.int64[5]")) -> (tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>) {
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<2x5x32xf32>
    %cst_0 = stablehlo.constant dense<4.471500e-02> : tensor<2x5x32xf32>
    %cst_1 = stablehlo.constant dense<0.797884583> : tensor<2x5x32xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<2x5x32xf32>
    %cst_3 = stablehlo.constant dense<5.000000e-01> : tensor<2x5x32xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<2x4x5x5xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<2x4x5x5xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<5x5xf32>
    %c = stablehlo.constant dense<false> : tensor<5x5xi1>
    %c_7 = stablehlo.constant dense<true> : tensor<5x5xi1>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x12x4xf32>
    %cst_9 = stablehlo.constant dense<[[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]> : tensor<1x5xf32>
    %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
    %cst_11 = stablehlo.constant dense<6.250000e-02> : tensor<2x5xf32>
    %cst_12 = stablehlo.constant dense<2.000000e+00> : tensor<2x5x16xf32>
    %cst_13 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_14 = stablehlo.constant dense<false> : tensor<i1>
    %c_15 = stablehlo.constant dense<true> : tensor<i1>
    %c_16 = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reshape %arg16 : (tensor<2x5xi64>) -> tensor<10xi64>
    %1 = stablehlo.convert %0 : (tensor<10xi64>) -> tensor<10xui32>
    %2 = "stablehlo.gather"(%arg0, %1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<10xui32>) -> tensor<10x16xf32>
    %3 = stablehlo.reshape %2 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %4 = stablehlo.broadcast_in_dim %arg15, dims = [] : (tensor<f32>) -> tensor<2x5x16xf32>
    %5 = stablehlo.multiply %3, %4 : tensor<2x5x16xf32>
    %6 = stablehlo.power %5, %cst_12 : tensor<2x5x16xf32>
    %7 = stablehlo.reduce(%6 init: %cst_17) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %8 = stablehlo.multiply %7, %cst_11 : tensor<2x5xf32>
    %9 = stablehlo.reshape %8 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %10 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %11 = stablehlo.add %9, %10 : tensor<2x5x1xf32>
    %12 = stablehlo.rsqrt %11 : tensor<2x5x1xf32>
    %13 = stablehlo.reshape %12 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %15 = stablehlo.multiply %5, %14 : tensor<2x5x16xf32>
    %16 = stablehlo.add %arg14, %cst_10 : tensor<16xf32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %18 = stablehlo.multiply %15, %17 : tensor<2x5x16xf32>
    %19 = stablehlo.reshape %18 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %20 = stablehlo.transpose %arg21, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %21 = stablehlo.dot_general %19, %20, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %22 = stablehlo.reshape %21 : (tensor<10x16xf32>) -> tensor<2x5x4x4xf32>
    %23 = stablehlo.transpose %22, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,5,4]{3,1,2,0}"} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
    %24 = stablehlo.broadcast_in_dim %cst_9, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<1x5x2xf32>
    %25 = stablehlo.broadcast_in_dim %arg19, dims = [2] : (tensor<2xf32>) -> tensor<1x5x2xf32>
    %26 = stablehlo.multiply %24, %25 : tensor<1x5x2xf32>
    %27 = stablehlo.concatenate %26, %26, dim = 2 : (tensor<1x5x2xf32>, tensor<1x5x2xf32>) -> tensor<1x5x4xf32>
    %28 = stablehlo.cosine %27 : tensor<1x5x4xf32>
    %29 = stablehlo.reshape %28 : (tensor<1x5x4xf32>) -> tensor<5x4xf32>
    %30 = stablehlo.broadcast_in_dim %29, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x4x5x4xf32>
    %31 = stablehlo.multiply %23, %30 : tensor<2x4x5x4xf32>
    %32 = stablehlo.slice %23 [0:2, 0:4, 0:5, 2:4] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %33 = stablehlo.negate %32 : tensor<2x4x5x2xf32>
    %34 = stablehlo.slice %23 [0:2, 0:4, 0:5, 0:2] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %35 = stablehlo.concatenate %33, %34, dim = 3 : (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) -> tensor<2x4x5x4xf32>
    %36 = stablehlo.sine %27 : tensor<1x5x4xf32>
    %37 = stablehlo.reshape %36 : (tensor<1x5x4xf32>) -> tensor<5x4xf32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x4x5x4xf32>
    %39 = stablehlo.multiply %35, %38 : tensor<2x4x5x4xf32>
    %40 = stablehlo.add %31, %39 : tensor<2x4x5x4xf32>
    %41 = stablehlo.broadcast_in_dim %arg18, dims = [] : (tensor<f32>) -> tensor<2x4x5x4xf32>
    %42 = stablehlo.multiply %40, %41 : tensor<2x4x5x4xf32>
    %43 = stablehlo.reshape %42 : (tensor<2x4x5x4xf32>) -> tensor<8x5x4xf32>
    %44 = stablehlo.transpose %arg20, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %45 = stablehlo.dot_general %19, %44, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %46 = stablehlo.reshape %45 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %47 = stablehlo.transpose %46, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %48 = stablehlo.broadcast_in_dim %29, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x2x5x4xf32>
    %49 = stablehlo.multiply %47, %48 : tensor<2x2x5x4xf32>
    %50 = stablehlo.slice %47 [0:2, 0:2, 0:5, 2:4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %51 = stablehlo.negate %50 : tensor<2x2x5x2xf32>
    %52 = stablehlo.slice %47 [0:2, 0:2, 0:5, 0:2] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %53 = stablehlo.concatenate %51, %52, dim = 3 : (tensor<2x2x5x2xf32>, tensor<2x2x5x2xf32>) -> tensor<2x2x5x4xf32>
    %54 = stablehlo.broadcast_in_dim %37, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x2x5x4xf32>
    %55 = stablehlo.multiply %53, %54 : tensor<2x2x5x4xf32>
    %56 = stablehlo.add %49, %55 : tensor<2x2x5x4xf32>
    %57 = "stablehlo.scatter"(%cst_8, %c_16, %56) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      stablehlo.return %arg28 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %58 = stablehlo.slice %57 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %59 = stablehlo.broadcast_in_dim %58, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %60 = stablehlo.reshape %59 : (tensor<2x2x2x5x4xf32>) -> tensor<2x4x5x4xf32>
    %61 = stablehlo.transpose %60, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,4,5]{2,3,1,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x4x4x5xf32>
    %62 = stablehlo.broadcast_in_dim %arg18, dims = [] : (tensor<f32>) -> tensor<2x4x4x5xf32>
    %63 = stablehlo.multiply %61, %62 : tensor<2x4x4x5xf32>
    %64 = stablehlo.reshape %63 : (tensor<2x4x4x5xf32>) -> tensor<8x4x5xf32>
    %65 = stablehlo.dot_general %43, %64, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x5xf32>) -> tensor<8x5x5xf32>
    %66 = stablehlo.reshape %65 : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %67 = stablehlo.iota dim = 0 : tensor<5xi32>
    %68 = stablehlo.broadcast_in_dim %67, dims = [0] : (tensor<5xi32>) -> tensor<5x5xi32>
    %69 = stablehlo.broadcast_in_dim %67, dims = [1] : (tensor<5xi32>) -> tensor<5x5xi32>
    %70 = stablehlo.compare  GE, %68, %69 : (tensor<5x5xi32>, tensor<5x5xi32>) -> tensor<5x5xi1>
    %71 = stablehlo.select %70, %c_7, %c : tensor<5x5xi1>, tensor<5x5xi1>
    %72 = stablehlo.broadcast_in_dim %arg17, dims = [] : (tensor<f32>) -> tensor<5x5xf32>
    %73 = stablehlo.select %71, %cst_6, %72 : tensor<5x5xi1>, tensor<5x5xf32>
    %74 = stablehlo.broadcast_in_dim %73, dims = [2, 3] : (tensor<5x5xf32>) -> tensor<2x4x5x5xf32>
    %75 = stablehlo.add %66, %74 : tensor<2x4x5x5xf32>
    %76 = stablehlo.compare  EQ, %75, %cst_5 : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xi1>
    %77 = stablehlo.reduce(%76 init: %c_15) across dimensions = [3] : (tensor<2x4x5x5xi1>, tensor<i1>) -> tensor<2x4x5xi1>
     reducer(%arg27: tensor<i1>, %arg28: tensor<i1>)  {
      %265 = stablehlo.and %arg27, %arg28 : tensor<i1>
      %266 = stablehlo.select %265, %c_15, %c_14 : tensor<i1>, tensor<i1>
      stablehlo.return %266 : tensor<i1>
    }
    %78 = stablehlo.broadcast_in_dim %77, dims = [0, 1, 2] : (tensor<2x4x5xi1>) -> tensor<2x4x5x5xi1>
    %79 = stablehlo.reduce(%75 init: %cst_13) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %80 = stablehlo.broadcast_in_dim %79, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %81 = stablehlo.subtract %75, %80 : tensor<2x4x5x5xf32>
    %82 = stablehlo.exponential %81 : tensor<2x4x5x5xf32>
    %83 = stablehlo.reduce(%82 init: %cst_17) applies stablehlo.add across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %84 = stablehlo.broadcast_in_dim %83, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %85 = stablehlo.divide %82, %84 : tensor<2x4x5x5xf32>
    %86 = stablehlo.select %78, %cst_4, %85 : tensor<2x4x5x5xi1>, tensor<2x4x5x5xf32>
    %87 = stablehlo.reshape %86 : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %88 = stablehlo.transpose %arg13, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %89 = stablehlo.dot_general %19, %88, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %90 = stablehlo.reshape %89 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %91 = stablehlo.transpose %90, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %92 = "stablehlo.scatter"(%cst_8, %c_16, %91) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      stablehlo.return %arg28 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %93 = stablehlo.slice %92 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %94 = stablehlo.broadcast_in_dim %93, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %95 = stablehlo.reshape %94 : (tensor<2x2x2x5x4xf32>) -> tensor<8x5x4xf32>
    %96 = stablehlo.dot_general %87, %95, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x5xf32>, tensor<8x5x4xf32>) -> tensor<8x5x4xf32>
    %97 = stablehlo.reshape %96 : (tensor<8x5x4xf32>) -> tensor<2x4x5x4xf32>
    %98 = stablehlo.transpose %97, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,4,4]{3,1,2,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x5x4x4xf32>
    %99 = stablehlo.reshape %98 : (tensor<2x5x4x4xf32>) -> tensor<10x16xf32>
    %100 = stablehlo.transpose %arg12, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %101 = stablehlo.dot_general %99, %100, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %102 = stablehlo.reshape %101 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %103 = stablehlo.add %5, %102 : tensor<2x5x16xf32>
    %104 = stablehlo.power %103, %cst_12 : tensor<2x5x16xf32>
    %105 = stablehlo.reduce(%104 init: %cst_17) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %106 = stablehlo.multiply %105, %cst_11 : tensor<2x5xf32>
    %107 = stablehlo.reshape %106 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %108 = stablehlo.add %107, %10 : tensor<2x5x1xf32>
    %109 = stablehlo.rsqrt %108 : tensor<2x5x1xf32>
    %110 = stablehlo.reshape %109 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %111 = stablehlo.broadcast_in_dim %110, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %112 = stablehlo.multiply %103, %111 : tensor<2x5x16xf32>
    %113 = stablehlo.add %arg11, %cst_10 : tensor<16xf32>
    %114 = stablehlo.broadcast_in_dim %113, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %115 = stablehlo.multiply %112, %114 : tensor<2x5x16xf32>
    %116 = stablehlo.reshape %115 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %117 = stablehlo.transpose %arg22, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %118 = stablehlo.dot_general %116, %117, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %119 = stablehlo.reshape %118 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %120 = stablehlo.multiply %119, %cst_3 : tensor<2x5x32xf32>
    %121 = stablehlo.power %119, %cst : tensor<2x5x32xf32>
    %122 = stablehlo.multiply %121, %cst_0 : tensor<2x5x32xf32>
    %123 = stablehlo.add %119, %122 : tensor<2x5x32xf32>
    %124 = stablehlo.multiply %123, %cst_1 : tensor<2x5x32xf32>
    %125 = stablehlo.tanh %124 : tensor<2x5x32xf32>
    %126 = stablehlo.add %125, %cst_2 : tensor<2x5x32xf32>
    %127 = stablehlo.multiply %120, %126 : tensor<2x5x32xf32>
    %128 = stablehlo.transpose %arg10, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %129 = stablehlo.dot_general %116, %128, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %130 = stablehlo.reshape %129 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %131 = stablehlo.multiply %127, %130 : tensor<2x5x32xf32>
    %132 = stablehlo.reshape %131 : (tensor<2x5x32xf32>) -> tensor<10x32xf32>
    %133 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %134 = stablehlo.dot_general %132, %133, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x32xf32>, tensor<32x16xf32>) -> tensor<10x16xf32>
    %135 = stablehlo.reshape %134 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %136 = stablehlo.add %103, %135 : tensor<2x5x16xf32>
    %137 = stablehlo.optimization_barrier %136 : tensor<2x5x16xf32>
    %138 = stablehlo.custom_call @LayoutConstraint(%137) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
    %139 = stablehlo.power %138, %cst_12 : tensor<2x5x16xf32>
    %140 = stablehlo.reduce(%139 init: %cst_17) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %141 = stablehlo.multiply %140, %cst_11 : tensor<2x5xf32>
    %142 = stablehlo.reshape %141 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %143 = stablehlo.add %142, %10 : tensor<2x5x1xf32>
    %144 = stablehlo.rsqrt %143 : tensor<2x5x1xf32>
    %145 = stablehlo.reshape %144 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %146 = stablehlo.broadcast_in_dim %145, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %147 = stablehlo.multiply %138, %146 : tensor<2x5x16xf32>
    %148 = stablehlo.add %arg8, %cst_10 : tensor<16xf32>
    %149 = stablehlo.broadcast_in_dim %148, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %150 = stablehlo.multiply %147, %149 : tensor<2x5x16xf32>
    %151 = stablehlo.reshape %150 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %152 = stablehlo.transpose %arg24, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %153 = stablehlo.dot_general %151, %152, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %154 = stablehlo.reshape %153 : (tensor<10x16xf32>) -> tensor<2x5x4x4xf32>
    %155 = stablehlo.transpose %154, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,5,4]{3,1,2,0}"} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
    %156 = stablehlo.multiply %155, %30 : tensor<2x4x5x4xf32>
    %157 = stablehlo.slice %155 [0:2, 0:4, 0:5, 2:4] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %158 = stablehlo.negate %157 : tensor<2x4x5x2xf32>
    %159 = stablehlo.slice %155 [0:2, 0:4, 0:5, 0:2] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %160 = stablehlo.concatenate %158, %159, dim = 3 : (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) -> tensor<2x4x5x4xf32>
    %161 = stablehlo.multiply %160, %38 : tensor<2x4x5x4xf32>
    %162 = stablehlo.add %156, %161 : tensor<2x4x5x4xf32>
    %163 = stablehlo.multiply %162, %41 : tensor<2x4x5x4xf32>
    %164 = stablehlo.reshape %163 : (tensor<2x4x5x4xf32>) -> tensor<8x5x4xf32>
    %165 = stablehlo.transpose %arg23, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %166 = stablehlo.dot_general %151, %165, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %167 = stablehlo.reshape %166 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %168 = stablehlo.transpose %167, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %169 = stablehlo.multiply %168, %48 : tensor<2x2x5x4xf32>
    %170 = stablehlo.slice %168 [0:2, 0:2, 0:5, 2:4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %171 = stablehlo.negate %170 : tensor<2x2x5x2xf32>
    %172 = stablehlo.slice %168 [0:2, 0:2, 0:5, 0:2] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %173 = stablehlo.concatenate %171, %172, dim = 3 : (tensor<2x2x5x2xf32>, tensor<2x2x5x2xf32>) -> tensor<2x2x5x4xf32>
    %174 = stablehlo.multiply %173, %54 : tensor<2x2x5x4xf32>
    %175 = stablehlo.add %169, %174 : tensor<2x2x5x4xf32>
    %176 = "stablehlo.scatter"(%cst_8, %c_16, %175) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      stablehlo.return %arg28 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %177 = stablehlo.slice %176 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %178 = stablehlo.broadcast_in_dim %177, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %179 = stablehlo.reshape %178 : (tensor<2x2x2x5x4xf32>) -> tensor<2x4x5x4xf32>
    %180 = stablehlo.transpose %179, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,4,5]{2,3,1,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x4x4x5xf32>
    %181 = stablehlo.multiply %180, %62 : tensor<2x4x4x5xf32>
    %182 = stablehlo.reshape %181 : (tensor<2x4x4x5xf32>) -> tensor<8x4x5xf32>
    %183 = stablehlo.dot_general %164, %182, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x5xf32>) -> tensor<8x5x5xf32>
    %184 = stablehlo.reshape %183 : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %185 = stablehlo.add %184, %74 : tensor<2x4x5x5xf32>
    %186 = stablehlo.compare  EQ, %185, %cst_5 : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xi1>
    %187 = stablehlo.reduce(%186 init: %c_15) across dimensions = [3] : (tensor<2x4x5x5xi1>, tensor<i1>) -> tensor<2x4x5xi1>
     reducer(%arg27: tensor<i1>, %arg28: tensor<i1>)  {
      %265 = stablehlo.and %arg27, %arg28 : tensor<i1>
      %266 = stablehlo.select %265, %c_15, %c_14 : tensor<i1>, tensor<i1>
      stablehlo.return %266 : tensor<i1>
    }
    %188 = stablehlo.broadcast_in_dim %187, dims = [0, 1, 2] : (tensor<2x4x5xi1>) -> tensor<2x4x5x5xi1>
    %189 = stablehlo.reduce(%185 init: %cst_13) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %190 = stablehlo.broadcast_in_dim %189, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %191 = stablehlo.subtract %185, %190 : tensor<2x4x5x5xf32>
    %192 = stablehlo.exponential %191 : tensor<2x4x5x5xf32>
    %193 = stablehlo.reduce(%192 init: %cst_17) applies stablehlo.add across dimensions = [3] : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %194 = stablehlo.broadcast_in_dim %193, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x5xf32>
    %195 = stablehlo.divide %192, %194 : tensor<2x4x5x5xf32>
    %196 = stablehlo.select %188, %cst_4, %195 : tensor<2x4x5x5xi1>, tensor<2x4x5x5xf32>
    %197 = stablehlo.reshape %196 : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %198 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %199 = stablehlo.dot_general %151, %198, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %200 = stablehlo.reshape %199 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %201 = stablehlo.transpose %200, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %202 = "stablehlo.scatter"(%cst_8, %c_16, %201) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      stablehlo.return %arg28 : tensor<f32>
    }) : (tensor<2x2x12x4xf32>, tensor<5xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x12x4xf32>
    %203 = stablehlo.slice %202 [0:2, 0:2, 0:5, 0:4] : (tensor<2x2x12x4xf32>) -> tensor<2x2x5x4xf32>
    %204 = stablehlo.broadcast_in_dim %203, dims = [0, 1, 3, 4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x2x5x4xf32>
    %205 = stablehlo.reshape %204 : (tensor<2x2x2x5x4xf32>) -> tensor<8x5x4xf32>
    %206 = stablehlo.dot_general %197, %205, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x5xf32>, tensor<8x5x4xf32>) -> tensor<8x5x4xf32>
    %207 = stablehlo.reshape %206 : (tensor<8x5x4xf32>) -> tensor<2x4x5x4xf32>
    %208 = stablehlo.transpose %207, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,4,4]{3,1,2,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x5x4x4xf32>
    %209 = stablehlo.reshape %208 : (tensor<2x5x4x4xf32>) -> tensor<10x16xf32>
    %210 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %211 = stablehlo.dot_general %209, %210, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %212 = stablehlo.reshape %211 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %213 = stablehlo.add %138, %212 : tensor<2x5x16xf32>
    %214 = stablehlo.power %213, %cst_12 : tensor<2x5x16xf32>
    %215 = stablehlo.reduce(%214 init: %cst_17) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %216 = stablehlo.multiply %215, %cst_11 : tensor<2x5xf32>
    %217 = stablehlo.reshape %216 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %218 = stablehlo.add %217, %10 : tensor<2x5x1xf32>
    %219 = stablehlo.rsqrt %218 : tensor<2x5x1xf32>
    %220 = stablehlo.reshape %219 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %221 = stablehlo.broadcast_in_dim %220, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %222 = stablehlo.multiply %213, %221 : tensor<2x5x16xf32>
    %223 = stablehlo.add %arg5, %cst_10 : tensor<16xf32>
    %224 = stablehlo.broadcast_in_dim %223, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %225 = stablehlo.multiply %222, %224 : tensor<2x5x16xf32>
    %226 = stablehlo.reshape %225 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %227 = stablehlo.transpose %arg25, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %228 = stablehlo.dot_general %226, %227, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %229 = stablehlo.reshape %228 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %230 = stablehlo.multiply %229, %cst_3 : tensor<2x5x32xf32>
    %231 = stablehlo.power %229, %cst : tensor<2x5x32xf32>
    %232 = stablehlo.multiply %231, %cst_0 : tensor<2x5x32xf32>
    %233 = stablehlo.add %229, %232 : tensor<2x5x32xf32>
    %234 = stablehlo.multiply %233, %cst_1 : tensor<2x5x32xf32>
    %235 = stablehlo.tanh %234 : tensor<2x5x32xf32>
    %236 = stablehlo.add %235, %cst_2 : tensor<2x5x32xf32>
    %237 = stablehlo.multiply %230, %236 : tensor<2x5x32xf32>
    %238 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %239 = stablehlo.dot_general %226, %238, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %240 = stablehlo.reshape %239 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %241 = stablehlo.multiply %237, %240 : tensor<2x5x32xf32>
    %242 = stablehlo.reshape %241 : (tensor<2x5x32xf32>) -> tensor<10x32xf32>
    %243 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %244 = stablehlo.dot_general %242, %243, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x32xf32>, tensor<32x16xf32>) -> tensor<10x16xf32>
    %245 = stablehlo.reshape %244 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %246 = stablehlo.add %213, %245 : tensor<2x5x16xf32>
    %247 = stablehlo.power %246, %cst_12 : tensor<2x5x16xf32>
    %248 = stablehlo.reduce(%247 init: %cst_17) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %249 = stablehlo.multiply %248, %cst_11 : tensor<2x5xf32>
    %250 = stablehlo.reshape %249 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %251 = stablehlo.add %250, %10 : tensor<2x5x1xf32>
    %252 = stablehlo.rsqrt %251 : tensor<2x5x1xf32>
    %253 = stablehlo.reshape %252 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %254 = stablehlo.broadcast_in_dim %253, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %255 = stablehlo.multiply %246, %254 : tensor<2x5x16xf32>
    %256 = stablehlo.add %arg1, %cst_10 : tensor<16xf32>
    %257 = stablehlo.broadcast_in_dim %256, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %258 = stablehlo.multiply %255, %257 : tensor<2x5x16xf32>
    %259 = stablehlo.reshape %258 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %260 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %261 = stablehlo.dot_general %259, %260, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x48xf32>) -> tensor<10x48xf32>
    %262 = stablehlo.reshape %261 : (tensor<10x48xf32>) -> tensor<2x5x48xf32>
    %263 = stablehlo.slice %262 [0:2, 4:5, 0:48] : (tensor<2x5x48xf32>) -> tensor<2x1x48xf32>
    %264 = stablehlo.reshape %263 : (tensor<2x1x48xf32>) -> tensor<2x48xf32>
    return %264, %57, %92, %176, %202, %arg26, %arg26 : tensor<2x48xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<2x2x12x4xf32>, tensor<i64>, tensor<i64>
  }
}
