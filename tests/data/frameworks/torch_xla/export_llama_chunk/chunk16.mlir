module @IrToHlo.585 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<128x64xf32> loc("lm_head.weight"), %arg1: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg2: tensor<64x128xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg3: tensor<128x64xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg4: tensor<64x64xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg5: tensor<32x64xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg6: tensor<64x128xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg7: tensor<128x64xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg8: tensor<64x64xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg9: tensor<32x64xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg10: tensor<128x64xf32> loc("model.embed_tokens.weight"), %arg11: tensor<64xf32> loc("model.layers.0.input_layernorm.weight"), %arg12: tensor<i64> loc("lifted.int64[224]"), %arg13: tensor<i64> loc("lifted.int64[2]"), %arg14: tensor<f64> loc("lifted.float64[-3.4028234663852886e+38]"), %arg15: tensor<f32> loc("lifted.float32[0.5]"), %arg16: tensor<8xf32> loc("model.rotary_emb.inv_freq"), %arg17: tensor<32x64xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg18: tensor<64x64xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg19: tensor<64xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg20: tensor<128x64xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg21: tensor<64xf32> loc("model.layers.1.input_layernorm.weight"), %arg22: tensor<32x64xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg23: tensor<64x64xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg24: tensor<64xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg25: tensor<128x64xf32> loc("model.layers.1.mlp.gate_proj.weight"), %arg26: tensor<64xf32> loc("model.norm.weight"), %arg27: tensor<2x2x224x16xf32> loc("cache.0.keys"), %arg28: tensor<2x2x224x16xf32> loc("cache.0.values"), %arg29: tensor<2x2x224x16xf32> loc("cache.1.keys"), %arg30: tensor<2x2x224x16xf32> loc("cache.1.values"), %arg31: tensor<2x16xi64> loc("tokens"), %arg32: tensor<16xi64> loc("cache_position")) -> (tensor<2x128xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4x16x224xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<2x4x16x224xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x16x224xf32>
    %cst_2 = stablehlo.constant dense<1.562500e-02> : tensor<2x16xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<2x16x64xf32>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_5 = stablehlo.constant dense<false> : tensor<i1>
    %c_6 = stablehlo.constant dense<"0x00000000000000000100000000000000020000000000000003000000000000000400000000000000050000000000000006000000000000000700000000000000080000000000000009000000000000000A000000000000000B000000000000000C000000000000000D000000000000000E000000000000000F0000000000000010000000000000001100000000000000120000000000000013000000000000001400000000000000150000000000000016000000000000001700000000000000180000000000000019000000000000001A000000000000001B000000000000001C000000000000001D000000000000001E000000000000001F0000000000000020000000000000002100000000000000220000000000000023000000000000002400000000000000250000000000000026000000000000002700000000000000280000000000000029000000000000002A000000000000002B000000000000002C000000000000002D000000000000002E000000000000002F0000000000000030000000000000003100000000000000320000000000000033000000000000003400000000000000350000000000000036000000000000003700000000000000380000000000000039000000000000003A000000000000003B000000000000003C000000000000003D000000000000003E000000000000003F0000000000000040000000000000004100000000000000420000000000000043000000000000004400000000000000450000000000000046000000000000004700000000000000480000000000000049000000000000004A000000000000004B000000000000004C000000000000004D000000000000004E000000000000004F0000000000000050000000000000005100000000000000520000000000000053000000000000005400000000000000550000000000000056000000000000005700000000000000580000000000000059000000000000005A000000000000005B000000000000005C000000000000005D000000000000005E000000000000005F0000000000000060000000000000006100000000000000620000000000000063000000000000006400000000000000650000000000000066000000000000006700000000000000680000000000000069000000000000006A000000000000006B000000000000006C000000000000006D000000000000006E000000000000006F0000000000000070000000000000007100000000000000720000000000000073000000000000007400000000000000750000000000000076000000000000007700000000000000780000000000000079000000000000007A000000000000007B000000000000007C000000000000007D000000000000007E000000000000007F0000000000000080000000000000008100000000000000820000000000000083000000000000008400000000000000850000000000000086000000000000008700000000000000880000000000000089000000000000008A000000000000008B000000000000008C000000000000008D000000000000008E000000000000008F0000000000000090000000000000009100000000000000920000000000000093000000000000009400000000000000950000000000000096000000000000009700000000000000980000000000000099000000000000009A000000000000009B000000000000009C000000000000009D000000000000009E000000000000009F00000000000000A000000000000000A100000000000000A200000000000000A300000000000000A400000000000000A500000000000000A600000000000000A700000000000000A800000000000000A900000000000000AA00000000000000AB00000000000000AC00000000000000AD00000000000000AE00000000000000AF00000000000000B000000000000000B100000000000000B200000000000000B300000000000000B400000000000000B500000000000000B600000000000000B700000000000000B800000000000000B900000000000000BA00000000000000BB00000000000000BC00000000000000BD00000000000000BE00000000000000BF00000000000000C000000000000000C100000000000000C200000000000000C300000000000000C400000000000000C500000000000000C600000000000000C700000000000000C800000000000000C900000000000000CA00000000000000CB00000000000000CC00000000000000CD00000000000000CE00000000000000CF00000000000000D000000000000000D100000000000000D200000000000000D300000000000000D400000000000000D500000000000000D600000000000000D700000000000000D800000000000000D900000000000000DA00000000000000DB00000000000000DC00000000000000DD00000000000000DE00000000000000DF00000000000000"> : tensor<224xi64>
    %c_7 = stablehlo.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi64>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg26, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %1 = stablehlo.reshape %arg31 : (tensor<2x16xi64>) -> tensor<32xi64>
    %2 = stablehlo.convert %1 : (tensor<32xi64>) -> tensor<32xui32>
    %3 = "stablehlo.gather"(%arg10, %2) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> : (tensor<128x64xf32>, tensor<32xui32>) -> tensor<32x64xf32>
    %4 = stablehlo.reshape %3 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %5 = stablehlo.broadcast_in_dim %arg11, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %6 = stablehlo.power %4, %cst_3 : tensor<2x16x64xf32>
    %7 = stablehlo.reduce(%6 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %8 = stablehlo.multiply %7, %cst_2 : tensor<2x16xf32>
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
    %22 = stablehlo.broadcast_in_dim %arg32, dims = [1] : (tensor<16xi64>) -> tensor<2x16xi64>
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
    %44 = stablehlo.slice %arg32 [0:1] : (tensor<16xi64>) -> tensor<1xi64>
    %45 = stablehlo.reshape %44 : (tensor<1xi64>) -> tensor<i64>
    %46 = stablehlo.broadcast_in_dim %45, dims = [] : (tensor<i64>) -> tensor<16xi64>
    %47 = stablehlo.add %46, %c_7 : tensor<16xi64>
    %48 = stablehlo.transpose %arg17, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %49 = stablehlo.dot_general %17, %48, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %50 = stablehlo.reshape %49 : (tensor<32x32xf32>) -> tensor<2x16x2x16xf32>
    %51 = stablehlo.transpose %50, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,16]{3,1,2,0}"} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %52 = stablehlo.broadcast_in_dim %30, dims = [0, 2, 3] : (tensor<2x16x16xf32>) -> tensor<2x2x16x16xf32>
    %53 = stablehlo.multiply %51, %52 : tensor<2x2x16x16xf32>
    %54 = stablehlo.slice %51 [0:2, 0:2, 0:16, 8:16] : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x8xf32>
    %55 = stablehlo.negate %54 : tensor<2x2x16x8xf32>
    %56 = stablehlo.slice %51 [0:2, 0:2, 0:16, 0:8] : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x8xf32>
    %57 = stablehlo.concatenate %55, %56, dim = 3 : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x16xf32>
    %58 = stablehlo.broadcast_in_dim %37, dims = [0, 2, 3] : (tensor<2x16x16xf32>) -> tensor<2x2x16x16xf32>
    %59 = stablehlo.multiply %57, %58 : tensor<2x2x16x16xf32>
    %60 = stablehlo.add %53, %59 : tensor<2x2x16x16xf32>
    %61 = "stablehlo.scatter"(%arg27, %47, %60) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<16xi64>, tensor<2x2x16x16xf32>) -> tensor<2x2x224x16xf32>
    %62 = stablehlo.broadcast_in_dim %61, dims = [0, 1, 3, 4] : (tensor<2x2x224x16xf32>) -> tensor<2x2x2x224x16xf32>
    %63 = stablehlo.reshape %62 : (tensor<2x2x2x224x16xf32>) -> tensor<2x4x224x16xf32>
    %64 = stablehlo.transpose %63, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,16,224]{2,3,1,0}"} : (tensor<2x4x224x16xf32>) -> tensor<2x4x16x224xf32>
    %65 = stablehlo.broadcast_in_dim %arg15, dims = [] : (tensor<f32>) -> tensor<2x4x16x224xf32>
    %66 = stablehlo.multiply %64, %65 : tensor<2x4x16x224xf32>
    %67 = stablehlo.reshape %66 : (tensor<2x4x16x224xf32>) -> tensor<8x16x224xf32>
    %68 = stablehlo.dot_general %43, %67, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x16x16xf32>, tensor<8x16x224xf32>) -> tensor<8x16x224xf32>
    %69 = stablehlo.reshape %68 : (tensor<8x16x224xf32>) -> tensor<2x4x16x224xf32>
    %70 = stablehlo.broadcast_in_dim %c_6, dims = [2] : (tensor<224xi64>) -> tensor<2x16x224xi64>
    %71 = stablehlo.broadcast_in_dim %arg32, dims = [1] : (tensor<16xi64>) -> tensor<2x16x224xi64>
    %72 = stablehlo.compare  LE, %70, %71 : (tensor<2x16x224xi64>, tensor<2x16x224xi64>) -> tensor<2x16x224xi1>
    %73 = stablehlo.convert %arg14 : (tensor<f64>) -> tensor<f32>
    %74 = stablehlo.broadcast_in_dim %73, dims = [] : (tensor<f32>) -> tensor<2x16x224xf32>
    %75 = stablehlo.select %72, %cst_1, %74 : tensor<2x16x224xi1>, tensor<2x16x224xf32>
    %76 = stablehlo.broadcast_in_dim %75, dims = [0, 2, 3] : (tensor<2x16x224xf32>) -> tensor<2x4x16x224xf32>
    %77 = stablehlo.add %69, %76 : tensor<2x4x16x224xf32>
    %78 = stablehlo.compare  EQ, %77, %cst_0 : (tensor<2x4x16x224xf32>, tensor<2x4x16x224xf32>) -> tensor<2x4x16x224xi1>
    %79 = stablehlo.reduce(%78 init: %c) across dimensions = [3] : (tensor<2x4x16x224xi1>, tensor<i1>) -> tensor<2x4x16xi1>
     reducer(%arg33: tensor<i1>, %arg34: tensor<i1>)  {
      %245 = stablehlo.and %arg33, %arg34 : tensor<i1>
      %246 = stablehlo.select %245, %c, %c_5 : tensor<i1>, tensor<i1>
      stablehlo.return %246 : tensor<i1>
    }
    %80 = stablehlo.broadcast_in_dim %79, dims = [0, 1, 2] : (tensor<2x4x16xi1>) -> tensor<2x4x16x224xi1>
    %81 = stablehlo.reduce(%77 init: %cst_4) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x16x224xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %82 = stablehlo.broadcast_in_dim %81, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x224xf32>
    %83 = stablehlo.subtract %77, %82 : tensor<2x4x16x224xf32>
    %84 = stablehlo.exponential %83 : tensor<2x4x16x224xf32>
    %85 = stablehlo.reduce(%84 init: %cst_8) applies stablehlo.add across dimensions = [3] : (tensor<2x4x16x224xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %86 = stablehlo.broadcast_in_dim %85, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x224xf32>
    %87 = stablehlo.divide %84, %86 : tensor<2x4x16x224xf32>
    %88 = stablehlo.select %80, %cst, %87 : tensor<2x4x16x224xi1>, tensor<2x4x16x224xf32>
    %89 = stablehlo.reshape %88 : (tensor<2x4x16x224xf32>) -> tensor<8x16x224xf32>
    %90 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %91 = stablehlo.dot_general %17, %90, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %92 = stablehlo.reshape %91 : (tensor<32x32xf32>) -> tensor<2x16x2x16xf32>
    %93 = stablehlo.transpose %92, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,16]{3,1,2,0}"} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %94 = "stablehlo.scatter"(%arg28, %47, %93) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<16xi64>, tensor<2x2x16x16xf32>) -> tensor<2x2x224x16xf32>
    %95 = stablehlo.broadcast_in_dim %94, dims = [0, 1, 3, 4] : (tensor<2x2x224x16xf32>) -> tensor<2x2x2x224x16xf32>
    %96 = stablehlo.reshape %95 : (tensor<2x2x2x224x16xf32>) -> tensor<8x224x16xf32>
    %97 = stablehlo.dot_general %89, %96, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x16x224xf32>, tensor<8x224x16xf32>) -> tensor<8x16x16xf32>
    %98 = stablehlo.reshape %97 : (tensor<8x16x16xf32>) -> tensor<2x4x16x16xf32>
    %99 = stablehlo.transpose %98, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,16,4,16]{3,1,2,0}"} : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
    %100 = stablehlo.reshape %99 : (tensor<2x16x4x16xf32>) -> tensor<32x64xf32>
    %101 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %102 = stablehlo.dot_general %100, %101, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %103 = stablehlo.reshape %102 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %104 = stablehlo.add %4, %103 : tensor<2x16x64xf32>
    %105 = stablehlo.broadcast_in_dim %arg19, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %106 = stablehlo.power %104, %cst_3 : tensor<2x16x64xf32>
    %107 = stablehlo.reduce(%106 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %108 = stablehlo.multiply %107, %cst_2 : tensor<2x16xf32>
    %109 = stablehlo.reshape %108 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %110 = stablehlo.add %109, %10 : tensor<2x16x1xf32>
    %111 = stablehlo.rsqrt %110 : tensor<2x16x1xf32>
    %112 = stablehlo.reshape %111 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %113 = stablehlo.broadcast_in_dim %112, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %114 = stablehlo.multiply %104, %113 : tensor<2x16x64xf32>
    %115 = stablehlo.multiply %105, %114 : tensor<2x16x64xf32>
    %116 = stablehlo.reshape %115 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %117 = stablehlo.transpose %arg20, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %118 = stablehlo.dot_general %116, %117, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %119 = stablehlo.reshape %118 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %120 = stablehlo.logistic %119 : tensor<2x16x128xf32>
    %121 = stablehlo.multiply %119, %120 : tensor<2x16x128xf32>
    %122 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %123 = stablehlo.dot_general %116, %122, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %124 = stablehlo.reshape %123 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %125 = stablehlo.multiply %121, %124 : tensor<2x16x128xf32>
    %126 = stablehlo.reshape %125 : (tensor<2x16x128xf32>) -> tensor<32x128xf32>
    %127 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[128,64]{0,1}"} : (tensor<64x128xf32>) -> tensor<128x64xf32>
    %128 = stablehlo.dot_general %126, %127, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x128xf32>, tensor<128x64xf32>) -> tensor<32x64xf32>
    %129 = stablehlo.reshape %128 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %130 = stablehlo.add %104, %129 : tensor<2x16x64xf32>
    %131 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %132 = stablehlo.power %130, %cst_3 : tensor<2x16x64xf32>
    %133 = stablehlo.reduce(%132 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %134 = stablehlo.multiply %133, %cst_2 : tensor<2x16xf32>
    %135 = stablehlo.reshape %134 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %136 = stablehlo.add %135, %10 : tensor<2x16x1xf32>
    %137 = stablehlo.rsqrt %136 : tensor<2x16x1xf32>
    %138 = stablehlo.reshape %137 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %139 = stablehlo.broadcast_in_dim %138, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %140 = stablehlo.multiply %130, %139 : tensor<2x16x64xf32>
    %141 = stablehlo.multiply %131, %140 : tensor<2x16x64xf32>
    %142 = stablehlo.reshape %141 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %143 = stablehlo.transpose %arg23, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %144 = stablehlo.dot_general %142, %143, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %145 = stablehlo.reshape %144 : (tensor<32x64xf32>) -> tensor<2x16x4x16xf32>
    %146 = stablehlo.transpose %145, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,16,16]{3,1,2,0}"} : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
    %147 = stablehlo.multiply %146, %31 : tensor<2x4x16x16xf32>
    %148 = stablehlo.slice %146 [0:2, 0:4, 0:16, 8:16] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
    %149 = stablehlo.negate %148 : tensor<2x4x16x8xf32>
    %150 = stablehlo.slice %146 [0:2, 0:4, 0:16, 0:8] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
    %151 = stablehlo.concatenate %149, %150, dim = 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
    %152 = stablehlo.multiply %151, %38 : tensor<2x4x16x16xf32>
    %153 = stablehlo.add %147, %152 : tensor<2x4x16x16xf32>
    %154 = stablehlo.multiply %153, %41 : tensor<2x4x16x16xf32>
    %155 = stablehlo.reshape %154 : (tensor<2x4x16x16xf32>) -> tensor<8x16x16xf32>
    %156 = stablehlo.transpose %arg22, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %157 = stablehlo.dot_general %142, %156, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %158 = stablehlo.reshape %157 : (tensor<32x32xf32>) -> tensor<2x16x2x16xf32>
    %159 = stablehlo.transpose %158, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,16]{3,1,2,0}"} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %160 = stablehlo.multiply %159, %52 : tensor<2x2x16x16xf32>
    %161 = stablehlo.slice %159 [0:2, 0:2, 0:16, 8:16] : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x8xf32>
    %162 = stablehlo.negate %161 : tensor<2x2x16x8xf32>
    %163 = stablehlo.slice %159 [0:2, 0:2, 0:16, 0:8] : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x8xf32>
    %164 = stablehlo.concatenate %162, %163, dim = 3 : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x16xf32>
    %165 = stablehlo.multiply %164, %58 : tensor<2x2x16x16xf32>
    %166 = stablehlo.add %160, %165 : tensor<2x2x16x16xf32>
    %167 = "stablehlo.scatter"(%arg29, %47, %166) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<16xi64>, tensor<2x2x16x16xf32>) -> tensor<2x2x224x16xf32>
    %168 = stablehlo.broadcast_in_dim %167, dims = [0, 1, 3, 4] : (tensor<2x2x224x16xf32>) -> tensor<2x2x2x224x16xf32>
    %169 = stablehlo.reshape %168 : (tensor<2x2x2x224x16xf32>) -> tensor<2x4x224x16xf32>
    %170 = stablehlo.transpose %169, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,16,224]{2,3,1,0}"} : (tensor<2x4x224x16xf32>) -> tensor<2x4x16x224xf32>
    %171 = stablehlo.multiply %170, %65 : tensor<2x4x16x224xf32>
    %172 = stablehlo.reshape %171 : (tensor<2x4x16x224xf32>) -> tensor<8x16x224xf32>
    %173 = stablehlo.dot_general %155, %172, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x16x16xf32>, tensor<8x16x224xf32>) -> tensor<8x16x224xf32>
    %174 = stablehlo.reshape %173 : (tensor<8x16x224xf32>) -> tensor<2x4x16x224xf32>
    %175 = stablehlo.add %174, %76 : tensor<2x4x16x224xf32>
    %176 = stablehlo.compare  EQ, %175, %cst_0 : (tensor<2x4x16x224xf32>, tensor<2x4x16x224xf32>) -> tensor<2x4x16x224xi1>
    %177 = stablehlo.reduce(%176 init: %c) across dimensions = [3] : (tensor<2x4x16x224xi1>, tensor<i1>) -> tensor<2x4x16xi1>
     reducer(%arg33: tensor<i1>, %arg34: tensor<i1>)  {
      %245 = stablehlo.and %arg33, %arg34 : tensor<i1>
      %246 = stablehlo.select %245, %c, %c_5 : tensor<i1>, tensor<i1>
      stablehlo.return %246 : tensor<i1>
    }
    %178 = stablehlo.broadcast_in_dim %177, dims = [0, 1, 2] : (tensor<2x4x16xi1>) -> tensor<2x4x16x224xi1>
    %179 = stablehlo.reduce(%175 init: %cst_4) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x16x224xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %180 = stablehlo.broadcast_in_dim %179, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x224xf32>
    %181 = stablehlo.subtract %175, %180 : tensor<2x4x16x224xf32>
    %182 = stablehlo.exponential %181 : tensor<2x4x16x224xf32>
    %183 = stablehlo.reduce(%182 init: %cst_8) applies stablehlo.add across dimensions = [3] : (tensor<2x4x16x224xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %184 = stablehlo.broadcast_in_dim %183, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x224xf32>
    %185 = stablehlo.divide %182, %184 : tensor<2x4x16x224xf32>
    %186 = stablehlo.select %178, %cst, %185 : tensor<2x4x16x224xi1>, tensor<2x4x16x224xf32>
    %187 = stablehlo.reshape %186 : (tensor<2x4x16x224xf32>) -> tensor<8x16x224xf32>
    %188 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %189 = stablehlo.dot_general %142, %188, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %190 = stablehlo.reshape %189 : (tensor<32x32xf32>) -> tensor<2x16x2x16xf32>
    %191 = stablehlo.transpose %190, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,16]{3,1,2,0}"} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %192 = "stablehlo.scatter"(%arg30, %47, %191) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<16xi64>, tensor<2x2x16x16xf32>) -> tensor<2x2x224x16xf32>
    %193 = stablehlo.broadcast_in_dim %192, dims = [0, 1, 3, 4] : (tensor<2x2x224x16xf32>) -> tensor<2x2x2x224x16xf32>
    %194 = stablehlo.reshape %193 : (tensor<2x2x2x224x16xf32>) -> tensor<8x224x16xf32>
    %195 = stablehlo.dot_general %187, %194, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x16x224xf32>, tensor<8x224x16xf32>) -> tensor<8x16x16xf32>
    %196 = stablehlo.reshape %195 : (tensor<8x16x16xf32>) -> tensor<2x4x16x16xf32>
    %197 = stablehlo.transpose %196, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,16,4,16]{3,1,2,0}"} : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
    %198 = stablehlo.reshape %197 : (tensor<2x16x4x16xf32>) -> tensor<32x64xf32>
    %199 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %200 = stablehlo.dot_general %198, %199, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %201 = stablehlo.reshape %200 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %202 = stablehlo.add %130, %201 : tensor<2x16x64xf32>
    %203 = stablehlo.broadcast_in_dim %arg24, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
    %204 = stablehlo.power %202, %cst_3 : tensor<2x16x64xf32>
    %205 = stablehlo.reduce(%204 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %206 = stablehlo.multiply %205, %cst_2 : tensor<2x16xf32>
    %207 = stablehlo.reshape %206 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %208 = stablehlo.add %207, %10 : tensor<2x16x1xf32>
    %209 = stablehlo.rsqrt %208 : tensor<2x16x1xf32>
    %210 = stablehlo.reshape %209 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %211 = stablehlo.broadcast_in_dim %210, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %212 = stablehlo.multiply %202, %211 : tensor<2x16x64xf32>
    %213 = stablehlo.multiply %203, %212 : tensor<2x16x64xf32>
    %214 = stablehlo.reshape %213 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %215 = stablehlo.transpose %arg25, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %216 = stablehlo.dot_general %214, %215, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %217 = stablehlo.reshape %216 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %218 = stablehlo.logistic %217 : tensor<2x16x128xf32>
    %219 = stablehlo.multiply %217, %218 : tensor<2x16x128xf32>
    %220 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %221 = stablehlo.dot_general %214, %220, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %222 = stablehlo.reshape %221 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %223 = stablehlo.multiply %219, %222 : tensor<2x16x128xf32>
    %224 = stablehlo.reshape %223 : (tensor<2x16x128xf32>) -> tensor<32x128xf32>
    %225 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[128,64]{0,1}"} : (tensor<64x128xf32>) -> tensor<128x64xf32>
    %226 = stablehlo.dot_general %224, %225, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x128xf32>, tensor<128x64xf32>) -> tensor<32x64xf32>
    %227 = stablehlo.reshape %226 : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %228 = stablehlo.add %202, %227 : tensor<2x16x64xf32>
    %229 = stablehlo.power %228, %cst_3 : tensor<2x16x64xf32>
    %230 = stablehlo.reduce(%229 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %231 = stablehlo.multiply %230, %cst_2 : tensor<2x16xf32>
    %232 = stablehlo.reshape %231 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %233 = stablehlo.add %232, %10 : tensor<2x16x1xf32>
    %234 = stablehlo.rsqrt %233 : tensor<2x16x1xf32>
    %235 = stablehlo.reshape %234 : (tensor<2x16x1xf32>) -> tensor<2x16xf32>
    %236 = stablehlo.broadcast_in_dim %235, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %237 = stablehlo.multiply %228, %236 : tensor<2x16x64xf32>
    %238 = stablehlo.multiply %0, %237 : tensor<2x16x64xf32>
    %239 = stablehlo.reshape %238 : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %240 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %241 = stablehlo.dot_general %239, %240, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %242 = stablehlo.reshape %241 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %243 = stablehlo.slice %242 [0:2, 15:16, 0:128] : (tensor<2x16x128xf32>) -> tensor<2x1x128xf32>
    %244 = stablehlo.reshape %243 : (tensor<2x1x128xf32>) -> tensor<2x128xf32>
    return %244, %61, %94, %167, %192 : tensor<2x128xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>
  }
}
