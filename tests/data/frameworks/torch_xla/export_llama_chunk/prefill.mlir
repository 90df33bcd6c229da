module @IrToHlo.605 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<128x64xf32> loc("lm_head.weight"), %arg1: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg2: tensor<64x128xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg3: tensor<128x64xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg4: tensor<64x64xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg5: tensor<32x64xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg6: tensor<64x128xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg7: tensor<128x64xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg8: tensor<64x64xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg9: tensor<32x64xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg10: tensor<128x64xf32> loc("model.embed_tokens.weight"), %arg11: tensor<64xf32> loc("model.layers.0.input_layernorm.weight"), %arg12: tensor<i64> loc("lifted.int64[224]"), %arg13: tensor<i64> loc("lifted.int64[2]"), %arg14: tensor<f64> loc("lifted.float64[-3.4028234663852886e+38]"), %arg15: tensor<f32> loc("lifted.float32[0.5]"), %arg16: tensor<8xf32> loc("model.rotary_emb.inv_freq"), %arg17: tensor<32x64xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg18: tensor<64x64xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg19: tensor<64xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg20: tensor<128x64xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg21: tensor<64xf32> loc("model.layers.1.input_layernorm.weight"), %arg22: tensor<32x64xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg23: tensor<64x64xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg24: tensor<64xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg25: tensor<128x64xf32> loc("model.layers.1.mlp.gate_proj.weight"), %arg26: tensor<64xf32> loc("model.norm.weight"), %arg27: tensor<2x16xi64> loc("prompt")) -> (tensor<2x128xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4x16x224xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<2x4x16x224xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x16x224xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x224x16xf32>
    %cst_3 = stablehlo.constant dense<1.562500e-02> : tensor<2x16xf32>
    %cst_4 = stablehlo.constant dense<2.000000e+00> : tensor<2x16x64xf32>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_6 = stablehlo.constant dense<false> : tensor<i1>
    %c_7 = stablehlo.constant dense<"0x00000000000000000100000000000000020000000000000003000000000000000400000000000000050000000000000006000000000000000700000000000000080000000000000009000000000000000A000000000000000B000000000000000C000000000000000D000000000000000E000000000000000F0000000000000010000000000000001100000000000000120000000000000013000000000000001400000000000000150000000000000016000000000000001700000000000000180000000000000019000000000000001A000000000000001B000000000000001C000000000000001D000000000000001E000000000000001F0000000000000020000000000000002100000000000000220000000000000023000000000000002400000000000000250000000000000026000000000000002700000000000000280000000000000029000000000000002A000000000000002B000000000000002C000000000000002D000000000000002E000000000000002F0000000000000030000000000000003100000000000000320000000000000033000000000000003400000000000000350000000000000036000000000000003700000000000000380000000000000039000000000000003A000000000000003B000000000000003C000000000000003D000000000000003E000000000000003F0000000000000040000000000000004100000000000000420000000000000043000000000000004400000000000000450000000000000046000000000000004700000000000000480000000000000049000000000000004A000000000000004B000000000000004C000000000000004D000000000000004E000000000000004F0000000000000050000000000000005100000000000000520000000000000053000000000000005400000000000000550000000000000056000000000000005700000000000000580000000000000059000000000000005A000000000000005B000000000000005C000000000000005D000000000000005E000000000000005F0000000000000060000000000000006100000000000000620000000000000063000000000000006400000000000000650000000000000066000000000000006700000000000000680000000000000069000000000000006A000000000000006B000000000000006C000000000000006D000000000000006E000000000000006F0000000000000070000000000000007100000000000000720000000000000073000000000000007400000000000000750000000000000076000000000000007700000000000000780000000000000079000000000000007A000000000000007B000000000000007C000000000000007D000000000000007E000000000000007F0000000000000080000000000000008100000000000000820000000000000083000000000000008400000000000000850000000000000086000000000000008700000000000000880000000000000089000000000000008A000000000000008B000000000000008C000000000000008D000000000000008E000000000000008F0000000000000090000000000000009100000000000000920000000000000093000000000000009400000000000000950000000000000096000000000000009700000000000000980000000000000099000000000000009A000000000000009B000000000000009C000000000000009D000000000000009E000000000000009F00000000000000A000000000000000A100000000000000A200000000000000A300000000000000A400000000000000A500000000000000A600000000000000A700000000000000A800000000000000A900000000000000AA00000000000000AB00000000000000AC00000000000000AD00000000000000AE00000000000000AF00000000000000B000000000000000B100000000000000B200000000000000B300000000000000B400000000000000B500000000000000B600000000000000B700000000000000B800000000000000B900000000000000BA00000000000000BB00000000000000BC00000000000000BD00000000000000BE00000000000000BF00000000000000C000000000000000C100000000000000C200000000000000C300000000000000C400000000000000C500000000000000C600000000000000C700000000000000C800000000000000C900000000000000CA00000000000000CB00000000000000CC00000000000000CD00000000000000CE00000000000000CF00000000000000D000000000000000D100000000000000D200000000000000D300000000000000D400000000000000D500000000000000D600000000000000D700000000000000D800000000000000D900000000000000DA00000000000000DB00000000000000DC00000000000000DD00000000000000DE00000000000000DF00000000000000"> : tensor<224xi64>
    %c_8 = stablehlo.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi64>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg26, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %1 = stablehlo.reshape %arg27 : (tensor<2x16xi64>) -> tensor<32xi64>
    %2 = stablehlo.convert %1 : (tensor<32xi64>) -> tensor<32xui32>
    %3 = "stablehlo.gather"(%arg10, %2) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> : (tensor<128x64xf32>, tensor<32xui32>) -> tensor<32x64xf32>
    %4 = stablehlo.reshape %3 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %5 = stablehlo.broadcast_in_dim %arg11, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %6 = stablehlo.power %4, %cst_4 : tensor<2x16x64xf32>
    %7 = stablehlo.reduce(%6 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %8 = stablehlo.multiply %7, %cst_3 : tensor<2x16xf32>
    %9 = stablehlo.reshape %8 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %10 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %11 = stablehlo.add %9, %10 : tensor<2x16x1xf32>
    %12 = stablehlo.rsqrt %11 : tensor<2x16x1xf32>
    %13 = stablehlo.reshape %12 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %15 = stablehlo.multiply %4, %14 : tensor<2x16x64xf32>
    %16 = stablehlo.multiply %5, %15 : tensor<2x16x64xf32>
    %17 = stablehlo.reshape %16 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %18 = stablehlo.transpose %arg18, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %19 = stablehlo.dot_general %17, %18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %20 = stablehlo.reshape %19 : (tensor<32x64xf32>) -> tensor<2x16x4x16xf32>
    %21 = stablehlo.transpose %20, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,16,16]{3,1,2,0}"} : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
    %22 = stablehlo.broadcast_in_dim %c_8, dims = [1] : (tensor<16xi64>) -> tensor<2x16xi64>
    %23 = stablehlo.reshape %22 : (tensor<2x16xi64>) -> tensor<2x16x1xi64>
    %24 = stablehlo.convert %23 : (tensor<2x16x1xi64>) -> tensor<2x16x1xf32>
    %25 = stablehlo.reshape %24 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x8xf32>
    %27 = stablehlo.broadcast_in_dim %arg16, dims = [2] : (tensor<8xf32>) -> tensor<2x16x8xf32>
    %28 = stablehlo.multiply %26, %27 : tensor<2x16x8xf32>
    %29 = stablehlo.concatenate %28, %28, dim = 2 : (tensor<2x16x8xf32>, tensor<2x16x8xf32>) -> tensor<2x16x16xf32>
    %30 = stablehlo.cosine %29 : tensor<2x16x16xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [0, 2, 3] : (tensor<2x16x16xf32>) -> tensor<2x4x16x16xf32>
    %32 = stablehlo.multiply %21, %31 : tensor<2x4x16x16xf32>
    %33 = stablehlo.slice %21 [0:2, 0:4, 0:16, 8:16] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
    %34 = stablehlo.negate %33 : tensor<2x4x16x8xf32>
    %35 = stablehlo.slice %21 [0:2, 0:4, 0:16, 0:8] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
    %36 = stablehlo.concatenate %34, %35, dim = 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
    %37 = stablehlo.sine %29 : tensor<2x16x16xf32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [0, 2, 3] : (tensor<2x16x16xf32>) -> tensor<2x4x16x16xf32>
    %39 = stablehlo.multiply %36, %38 : tensor<2x4x16x16xf32>
    %40 = stablehlo.add %32, %39 : tensor<2x4x16x16xf32>
    %41 = stablehlo.broadcast_in_dim %arg15, dims = [] : (tensor<f32>) -> tensor<2x4x16x16xf32>
    %42 = stablehlo.multiply %40, %41 : tensor<2x4x16x16xf32>
    %43 = stablehlo.reshape %42 : (tensor<2x4x16x16xf32>) -> tensor<8x16x16xf32>
    %44 = stablehlo.transpose %arg17, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %45 = stablehlo.dot_general %17, %44, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %46 = stablehlo.reshape %45 : (tensor<32x32xf32>) -> tensor<2x16x2x16xf32>
    %47 = stablehlo.transpose %46, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,16]{3,1,2,0}"} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %48 = stablehlo.broadcast_in_dim %30, dims = [0, 2, 3] : (tensor<2x16x16xf32>) -> tensor<2x2x16x16xf32>
    %49 = stablehlo.multiply %47, %48 : tensor<2x2x16x16xf32>
    %50 = stablehlo.slice %47 [0:2, 0:2, 0:16, 8:16] : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x8xf32>
    %51 = stablehlo.negate %50 : tensor<2x2x16x8xf32>
    %52 = stablehlo.slice %47 [0:2, 0:2, 0:16, 0:8] : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x8xf32>
    %53 = stablehlo.concatenate %51, %52, dim = 3 : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x16xf32>
    %54 = stablehlo.broadcast_in_dim %37, dims = [0, 2, 3] : (tensor<2x16x16xf32>) -> tensor<2x2x16x16xf32>
    %55 = stablehlo.multiply %53, %54 : tensor<2x2x16x16xf32>
    %56 = stablehlo.add %49, %55 : tensor<2x2x16x16xf32>
    %57 = "stablehlo.scatter"(%cst_2, %c_8, %56) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg28: tensor<f32>, %arg29: tensor<f32>):
      stablehlo.return %arg29 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<16xi64>, tensor<2x2x16x16xf32>) -> tensor<2x2x224x16xf32>
    %58 = stablehlo.broadcast_in_dim %57, dims = [0, 1, 3, 4] : (tensor<2x2x224x16xf32>) -> tensor<2x2x2x224x16xf32>
    %59 = stablehlo.reshape %58 : (tensor<2x2x2x224x16xf32>) -> tensor<2x4x224x16xf32>
    %60 = stablehlo.transpose %59, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,16,224]{2,3,1,0}"} : (tensor<2x4x224x16xf32>) -> tensor<2x4x16x224xf32>
    %61 = stablehlo.broadcast_in_dim %arg15, dims = [] : (tensor<f32>) -> tensor<2x4x16x224xf32>
    %62 = stablehlo.multiply %60, %61 : tensor<2x4x16x224xf32>
    %63 = stablehlo.reshape %62 : (tensor<2x4x16x224xf32>) -> tensor<8x16x224xf32>
    %64 = stablehlo.dot_general %43, %63, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x16x16xf32>, tensor<8x16x224xf32>) -> tensor<8x16x224xf32>
    %65 = stablehlo.reshape %64 : (tensor<8x16x224xf32>) -> tensor<2x4x16x224xf32>
    %66 = stablehlo.broadcast_in_dim %c_7, dims = [2] : (tensor<224xi64>) -> tensor<2x16x224xi64>
    %67 = stablehlo.broadcast_in_dim %c_8, dims = [1] : (tensor<16xi64>) -> tensor<2x16x224xi64>
    %68 = stablehlo.compare  LE, %66, %67 : (tensor<2x16x224xi64>, tensor<2x16x224xi64>) -> tensor<2x16x224xi1>
    %69 = stablehlo.convert %arg14 : (tensor<f64>) -> tensor<f32>
    %70 = stablehlo.broadcast_in_dim %69, dims = [] : (tensor<f32>) -> tensor<2x16x224xf32>
    %71 = stablehlo.select %68, %cst_1, %70 : tensor<2x16x224xi1>, tensor<2x16x224xf32>
    %72 = stablehlo.broadcast_in_dim %71, dims = [0, 2, 3] : (tensor<2x16x224xf32>) -> tensor<2x4x16x224xf32>
    %73 = stablehlo.add %65, %72 : tensor<2x4x16x224xf32>
    %74 = stablehlo.compare  EQ, %73, %cst_0 : (tensor<2x4x16x224xf32>, tensor<2x4x16x224xf32>) -> tensor<2x4x16x224xi1>
    %75 = stablehlo.reduce(%74 init: %c) across dimensions = [3] : (tensor<2x4x16x224xi1>, tensor<i1>) -> tensor<2x4x16xi1>
     reducer(%arg28: tensor<i1>, %arg29: tensor<i1>)  {
      %241 = stablehlo.and %arg28, %arg29 : tensor<i1>
      %242 = stablehlo.select %241, %c, %c_6 : tensor<i1>, tensor<i1>
      stablehlo.return %242 : tensor<i1>
    }
    %76 = stablehlo.broadcast_in_dim %75, dims = [0, 1, 2] : (tensor<2x4x16xi1>) -> tensor<2x4x16x224xi1>
    %77 = stablehlo.reduce(%73 init: %cst_5) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x16x224xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x224xf32>
    %79 = stablehlo.subtract %73, %78 : tensor<2x4x16x224xf32>
    %80 = stablehlo.exponential %79 : tensor<2x4x16x224xf32>
    %81 = stablehlo.reduce(%80 init: %cst_9) applies stablehlo.add across dimensions = [3] : (tensor<2x4x16x224xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %82 = stablehlo.broadcast_in_dim %81, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x224xf32>
    %83 = stablehlo.divide %80, %82 : tensor<2x4x16x224xf32>
    %84 = stablehlo.select %76, %cst, %83 : tensor<2x4x16x224xi1>, tensor<2x4x16x224xf32>
    %85 = stablehlo.reshape %84 : (tensor<2x4x16x224xf32>) -> tensor<8x16x224xf32>
    %86 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %87 = stablehlo.dot_general %17, %86, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %88 = stablehlo.reshape %87 : (tensor<32x32xf32>) -> tensor<2x16x2x16xf32>
    %89 = stablehlo.transpose %88, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,16]{3,1,2,0}"} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %90 = "stablehlo.scatter"(%cst_2, %c_8, %89) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg28: tensor<f32>, %arg29: tensor<f32>):
      stablehlo.return %arg29 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<16xi64>, tensor<2x2x16x16xf32>) -> tensor<2x2x224x16xf32>
    %91 = stablehlo.broadcast_in_dim %90, dims = [0, 1, 3, 4] : (tensor<2x2x224x16xf32>) -> tensor<2x2x2x224x16xf32>
    %92 = stablehlo.reshape %91 : (tensor<2x2x2x224x16xf32>) -> tensor<8x224x16xf32>
    %93 = stablehlo.dot_general %85, %92, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x16x224xf32>, tensor<8x224x16xf32>) -> tensor<8x16x16xf32>
    %94 = stablehlo.reshape %93 : (tensor<8x16x16xf32>) -> tensor<2x4x16x16xf32>
    %95 = stablehlo.transpose %94, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,16,4,16]{3,1,2,0}"} : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
    %96 = stablehlo.reshape %95 : (tensor<2x16x4x16xf32>) -> tensor<32x64xf32>
    %97 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %98 = stablehlo.dot_general %96, %97, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %99 = stablehlo.reshape %98 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %100 = stablehlo.add %4, %99 : tensor<2x16x64xf32>
    %101 = stablehlo.broadcast_in_dim %arg19, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %102 = stablehlo.power %100, %cst_4 : tensor<2x16x64xf32>
    %103 = stablehlo.reduce(%102 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %104 = stablehlo.multiply %103, %cst_3 : tensor<2x16xf32>
    %105 = stablehlo.reshape %104 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %106 = stablehlo.add %105, %10 : tensor<2x16x1xf32>
    %107 = stablehlo.rsqrt %106 : tensor<2x16x1xf32>
    %108 = stablehlo.reshape %107 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %109 = stablehlo.broadcast_in_dim %108, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %110 = stablehlo.multiply %100, %109 : tensor<2x16x64xf32>
    %111 = stablehlo.multiply %101, %110 : tensor<2x16x64xf32>
    %112 = stablehlo.reshape %111 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %113 = stablehlo.transpose %arg20, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %114 = stablehlo.dot_general %112, %113, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %115 = stablehlo.reshape %114 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %116 = stablehlo.logistic %115 : tensor<2x16x128xf32>
    %117 = stablehlo.multiply %115, %116 : tensor<2x16x128xf32>
    %118 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %119 = stablehlo.dot_general %112, %118, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %120 = stablehlo.reshape %119 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %121 = stablehlo.multiply %117, %120 : tensor<2x16x128xf32>
    %122 = stablehlo.reshape %121 : (tensor<2x16x128xf32>) -> tensor<32x128xf32>
    %123 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[128,64]{0,1}"} : (tensor<64x128xf32>) -> tensor<128x64xf32>
    %124 = stablehlo.dot_general %122, %123, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x128xf32>, tensor<128x64xf32>) -> tensor<32x64xf32>
    %125 = stablehlo.reshape %124 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %126 = stablehlo.add %100, %125 : tensor<2x16x64xf32>
    %127 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %128 = stablehlo.power %126, %cst_4 : tensor<2x16x64xf32>
    %129 = stablehlo.reduce(%128 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %130 = stablehlo.multiply %129, %cst_3 : tensor<2x16xf32>
    %131 = stablehlo.reshape %130 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %132 = stablehlo.add %131, %10 : tensor<2x16x1xf32>
    %133 = stablehlo.rsqrt %132 : tensor<2x16x1xf32>
    %134 = stablehlo.reshape %133 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %135 = stablehlo.broadcast_in_dim %134, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %136 = stablehlo.multiply %126, %135 : tensor<2x16x64xf32>
    %137 = stablehlo.multiply %127, %136 : tensor<2x16x64xf32>
    %138 = stablehlo.reshape %137 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %139 = stablehlo.transpose %arg23, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %140 = stablehlo.dot_general %138, %139, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %141 = stablehlo.reshape %140 : (tensor<32x64xf32>) -> tensor<2x16x4x16xf32>
    %142 = stablehlo.transpose %141, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,16,16]{3,1,2,0}"} : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
    %143 = stablehlo.multiply %142, %31 : tensor<2x4x16x16xf32>
    %144 = stablehlo.slice %142 [0:2, 0:4, 0:16, 8:16] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
    %145 = stablehlo.negate %144 : tensor<2x4x16x8xf32>
    %146 = stablehlo.slice %142 [0:2, 0:4, 0:16, 0:8] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
    %147 = stablehlo.concatenate %145, %146, dim = 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
    %148 = stablehlo.multiply %147, %38 : tensor<2x4x16x16xf32>
    %149 = stablehlo.add %143, %148 : tensor<2x4x16x16xf32>
    %150 = stablehlo.multiply %149, %41 : tensor<2x4x16x16xf32>
    %151 = stablehlo.reshape %150 : (tensor<2x4x16x16xf32>) -> tensor<8x16x16xf32>
    %152 = stablehlo.transpose %arg22, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %153 = stablehlo.dot_general %138, %152, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %154 = stablehlo.reshape %153 : (tensor<32x32xf32>) -> tensor<2x16x2x16xf32>
    %155 = stablehlo.transpose %154, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,16]{3,1,2,0}"} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %156 = stablehlo.multiply %155, %48 : tensor<2x2x16x16xf32>
    %157 = stablehlo.slice %155 [0:2, 0:2, 0:16, 8:16] : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x8xf32>
    %158 = stablehlo.negate %157 : tensor<2x2x16x8xf32>
    %159 = stablehlo.slice %155 [0:2, 0:2, 0:16, 0:8] : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x8xf32>
    %160 = stablehlo.concatenate %158, %159, dim = 3 : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x16xf32>
    %161 = stablehlo.multiply %160, %54 : tensor<2x2x16x16xf32>
    %162 = stablehlo.add %156, %161 : tensor<2x2x16x16xf32>
    %163 = "stablehlo.scatter"(%cst_2, %c_8, %162) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg28: tensor<f32>, %arg29: tensor<f32>):
      stablehlo.return %arg29 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<16xi64>, tensor<2x2x16x16xf32>) -> tensor<2x2x224x16xf32>
    %164 = stablehlo.broadcast_in_dim %163, dims = [0, 1, 3, 4] : (tensor<2x2x224x16xf32>) -> tensor<2x2x2x224x16xf32>
    %165 = stablehlo.reshape %164 : (tensor<2x2x2x224x16xf32>) -> tensor<2x4x224x16xf32>
    %166 = stablehlo.transpose %165, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,16,224]{2,3,1,0}"} : (tensor<2x4x224x16xf32>) -> tensor<2x4x16x224xf32>
    %167 = stablehlo.multiply %166, %61 : tensor<2x4x16x224xf32>
    %168 = stablehlo.reshape %167 : (tensor<2x4x16x224xf32>) -> tensor<8x16x224xf32>
    %169 = stablehlo.dot_general %151, %168, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x16x16xf32>, tensor<8x16x224xf32>) -> tensor<8x16x224xf32>
    %170 = stablehlo.reshape %169 : (tensor<8x16x224xf32>) -> tensor<2x4x16x224xf32>
    %171 = stablehlo.add %170, %72 : tensor<2x4x16x224xf32>
    %172 = stablehlo.compare  EQ, %171, %cst_0 : (tensor<2x4x16x224xf32>, tensor<2x4x16x224xf32>) -> tensor<2x4x16x224xi1>
    %173 = stablehlo.reduce(%172 init: %c) across dimensions = [3] : (tensor<2x4x16x224xi1>, tensor<i1>) -> tensor<2x4x16xi1>
     reducer(%arg28: tensor<i1>, %arg29: tensor<i1>)  {
      %241 = stablehlo.and %arg28, %arg29 : tensor<i1>
      %242 = stablehlo.select %241, %c, %c_6 : tensor<i1>, tensor<i1>
      stablehlo.return %242 : tensor<i1>
    }
    %174 = stablehlo.broadcast_in_dim %173, dims = [0, 1, 2] : (tensor<2x4x16xi1>) -> tensor<2x4x16x224xi1>
    %175 = stablehlo.reduce(%171 init: %cst_5) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x16x224xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %176 = stablehlo.broadcast_in_dim %175, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x224xf32>
    %177 = stablehlo.subtract %171, %176 : tensor<2x4x16x224xf32>
    %178 = stablehlo.exponential %177 : tensor<2x4x16x224xf32>
    %179 = stablehlo.reduce(%178 init: %cst_9) applies stablehlo.add across dimensions = [3] : (tensor<2x4x16x224xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %180 = stablehlo.broadcast_in_dim %179, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x224xf32>
    %181 = stablehlo.divide %178, %180 : tensor<2x4x16x224xf32>
    %182 = stablehlo.select %174, %cst, %181 : tensor<2x4x16x224xi1>, tensor<2x4x16x224xf32>
    %183 = stablehlo.reshape %182 : (tensor<2x4x16x224xf32>) -> tensor<8x16x224xf32>
    %184 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %185 = stablehlo.dot_general %138, %184, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %186 = stablehlo.reshape %185 : (tensor<32x32xf32>) -> tensor<2x16x2x16xf32>
    %187 = stablehlo.transpose %186, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,16]{3,1,2,0}"} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %188 = "stablehlo.scatter"(%cst_2, %c_8, %187) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg28: tensor<f32>, %arg29: tensor<f32>):
      stablehlo.return %arg29 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<16xi64>, tensor<2x2x16x16xf32>) -> tensor<2x2x224x16xf32>
    %189 = stablehlo.broadcast_in_dim %188, dims = [0, 1, 3, 4] : (tensor<2x2x224x16xf32>) -> tensor<2x2x2x224x16xf32>
    %190 = stablehlo.reshape %189 : (tensor<2x2x2x224x16xf32>) -> tensor<8x224x16xf32>
    %191 = stablehlo.dot_general %183, %190, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x16x224xf32>, tensor<8x224x16xf32>) -> tensor<8x16x16xf32>
    %192 = stablehlo.reshape %191 : (tensor<8x16x16xf32>) -> tensor<2x4x16x16xf32>
    %193 = stablehlo.transpose %192, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,16,4,16]{3,1,2,0}"} : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
    %194 = stablehlo.reshape %193 : (tensor<2x16x4x16xf32>) -> tensor<32x64xf32>
    %195 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %196 = stablehlo.dot_general %194, %195, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %197 = stablehlo.reshape %196 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %198 = stablehlo.add %126, %197 : tensor<2x16x64xf32>
    %199 = stablehlo.broadcast_in_dim %arg24, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %200 = stablehlo.power %198, %cst_4 : tensor<2x16x64xf32>
    %201 = stablehlo.reduce(%200 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %202 = stablehlo.multiply %201, %cst_3 : tensor<2x16xf32>
    %203 = stablehlo.reshape %202 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %204 = stablehlo.add %203, %10 : tensor<2x16x1xf32>
    %205 = stablehlo.rsqrt %204 : tensor<2x16x1xf32>
    %206 = stablehlo.reshape %205 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %207 = stablehlo.broadcast_in_dim %206, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %208 = stablehlo.multiply %198, %207 : tensor<2x16x64xf32>
    %209 = stablehlo.multiply %199, %208 : tensor<2x16x64xf32>
    %210 = stablehlo.reshape %209 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %211 = stablehlo.transpose %arg25, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %212 = stablehlo.dot_general %210, %211, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %213 = stablehlo.reshape %212 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %214 = stablehlo.logistic %213 : tensor<2x16x128xf32>
    %215 = stablehlo.multiply %213, %214 : tensor<2x16x128xf32>
    %216 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %217 = stablehlo.dot_general %210, %216, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %218 = stablehlo.reshape %217 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %219 = stablehlo.multiply %215, %218 : tensor<2x16x128xf32>
    %220 = stablehlo.reshape %219 : (tensor<2x16x128xf32>) -> tensor<32x128xf32>
    %221 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[128,64]{0,1}"} : (tensor<64x128xf32>) -> tensor<128x64xf32>
    %222 = stablehlo.dot_general %220, %221, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x128xf32>, tensor<128x64xf32>) -> tensor<32x64xf32>
    %223 = stablehlo.reshape %222 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %224 = stablehlo.add %198, %223 : tensor<2x16x64xf32>
    %225 = stablehlo.power %224, %cst_4 : tensor<2x16x64xf32>
    %226 = stablehlo.reduce(%225 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %227 = stablehlo.multiply %226, %cst_3 : tensor<2x16xf32>
    %228 = stablehlo.reshape %227 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %229 = stablehlo.add %228, %10 : tensor<2x16x1xf32>
    %230 = stablehlo.rsqrt %229 : tensor<2x16x1xf32>
    %231 = stablehlo.reshape %230 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %232 = stablehlo.broadcast_in_dim %231, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %233 = stablehlo.multiply %224, %232 : tensor<2x16x64xf32>
    %234 = stablehlo.multiply %0, %233 : tensor<2x16x64xf32>
    %235 = stablehlo.reshape %234 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %236 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %237 = stablehlo.dot_general %235, %236, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %238 = stablehlo.reshape %237 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %239 = stablehlo.slice %238 [0:2, 15:16, 0:128] : (tensor<2x16x128xf32>) -> tensor<2x1x128xf32>
    %240 = stablehlo.reshape %239 : (tensor<2x1x128xf32>) -> tensor<2x128xf32>
    return %240, %57, %90, %163, %188 : tensor<2x128xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>
  }
}
