module @IrToHlo.741 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<128x64xf32> loc("lm_head.weight"), %arg1: tensor<f32> loc("lifted.float32[9.999999974752427e-07]"), %arg2: tensor<64x128xf32> loc("model.layers.1.mlp.down_proj.weight"), %arg3: tensor<128x64xf32> loc("model.layers.1.mlp.up_proj.weight"), %arg4: tensor<64x64xf32> loc("model.layers.1.self_attn.o_proj.weight"), %arg5: tensor<32x64xf32> loc("model.layers.1.self_attn.v_proj.weight"), %arg6: tensor<64x128xf32> loc("model.layers.0.mlp.down_proj.weight"), %arg7: tensor<128x64xf32> loc("model.layers.0.mlp.up_proj.weight"), %arg8: tensor<64x64xf32> loc("model.layers.0.self_attn.o_proj.weight"), %arg9: tensor<32x64xf32> loc("model.layers.0.self_attn.v_proj.weight"), %arg10: tensor<128x64xf32> loc("model.embed_tokens.weight"), %arg11: tensor<64xf32> loc("model.layers.0.input_layernorm.weight"), %arg12: tensor<i64> loc("lifted.int64[224]"), %arg13: tensor<i64> loc("lifted.int64[2]"), %arg14: tensor<f64> loc("lifted.float64[-3.4028234663852886e+38]"), %arg15: tensor<f32> loc("lifted.float32[0.5]"), %arg16: tensor<8xf32> loc("model.rotary_emb.inv_freq"), %arg17: tensor<32x64xf32> loc("model.layers.0.self_attn.k_proj.weight"), %arg18: tensor<64x64xf32> loc("model.layers.0.self_attn.q_proj.weight"), %arg19: tensor<64xf32> loc("model.layers.0.post_attention_layernorm.weight"), %arg20: tensor<128x64xf32> loc("model.layers.0.mlp.gate_proj.weight"), %arg21: tensor<64xf32> loc("model.layers.1.input_layernorm.weight"), %arg22: tensor<32x64xf32> loc("model.layers.1.self_attn.k_proj.weight"), %arg23: tensor<64x64xf32> loc("model.layers.1.self_attn.q_proj.weight"), %arg24: tensor<64xf32> loc("model.layers.1.post_attention_layernorm.weight"), %arg25: tensor<128x64xf32> loc("model.layers.1.mlp.gate_proj.weight"), %arg26: tensor<64xf32> loc("model.norm.weight"), %arg27: tensor<2x2x224x16xf32> loc("cache.0.keys"), %arg28: tensor<2x2x224x16xf32> loc("cache.0.values"), %arg29: tensor<2x2x224x16xf32> loc("cache.1.keys"), %arg30: tensor<2x2x224x16xf32> loc("cache.1.values"), %arg31: tensor<2xi64> loc("tokens"), %arg32: tensor<2xi64> loc("position")) -> (tensor<2x128xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x2x2x224xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<2x2x2x224xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x1x224xf32>
    %c = stablehlo.constant dense<"0x00000000000000000100000000000000020000000000000003000000000000000400000000000000050000000000000006000000000000000700000000000000080000000000000009000000000000000A000000000000000B000000000000000C000000000000000D000000000000000E000000000000000F0000000000000010000000000000001100000000000000120000000000000013000000000000001400000000000000150000000000000016000000000000001700000000000000180000000000000019000000000000001A000000000000001B000000000000001C000000000000001D000000000000001E000000000000001F0000000000000020000000000000002100000000000000220000000000000023000000000000002400000000000000250000000000000026000000000000002700000000000000280000000000000029000000000000002A000000000000002B000000000000002C000000000000002D000000000000002E000000000000002F0000000000000030000000000000003100000000000000320000000000000033000000000000003400000000000000350000000000000036000000000000003700000000000000380000000000000039000000000000003A000000000000003B000000000000003C000000000000003D000000000000003E000000000000003F0000000000000040000000000000004100000000000000420000000000000043000000000000004400000000000000450000000000000046000000000000004700000000000000480000000000000049000000000000004A000000000000004B000000000000004C000000000000004D000000000000004E000000000000004F0000000000000050000000000000005100000000000000520000000000000053000000000000005400000000000000550000000000000056000000000000005700000000000000580000000000000059000000000000005A000000000000005B000000000000005C000000000000005D000000000000005E000000000000005F0000000000000060000000000000006100000000000000620000000000000063000000000000006400000000000000650000000000000066000000000000006700000000000000680000000000000069000000000000006A000000000000006B000000000000006C000000000000006D000000000000006E000000000000006F0000000000000070000000000000007100000000000000720000000000000073000000000000007400000000000000750000000000000076000000000000007700000000000000780000000000000079000000000000007A000000000000007B000000000000007C000000000000007D000000000000007E000000000000007F0000000000000080000000000000008100000000000000820000000000000083000000000000008400000000000000850000000000000086000000000000008700000000000000880000000000000089000000000000008A000000000000008B000000000000008C000000000000008D000000000000008E000000000000008F0000000000000090000000000000009100000000000000920000000000000093000000000000009400000000000000950000000000000096000000000000009700000000000000980000000000000099000000000000009A000000000000009B000000000000009C000000000000009D000000000000009E000000000000009F00000000000000A000000000000000A100000000000000A200000000000000A300000000000000A400000000000000A500000000000000A600000000000000A700000000000000A800000000000000A900000000000000AA00000000000000AB00000000000000AC00000000000000AD00000000000000AE00000000000000AF00000000000000B000000000000000B100000000000000B200000000000000B300000000000000B400000000000000B500000000000000B600000000000000B700000000000000B800000000000000B900000000000000BA00000000000000BB00000000000000BC00000000000000BD00000000000000BE00000000000000BF00000000000000C000000000000000C100000000000000C200000000000000C300000000000000C400000000000000C500000000000000C600000000000000C700000000000000C800000000000000C900000000000000CA00000000000000CB00000000000000CC00000000000000CD00000000000000CE00000000000000CF00000000000000D000000000000000D100000000000000D200000000000000D300000000000000D400000000000000D500000000000000D600000000000000D700000000000000D800000000000000D900000000000000DA00000000000000DB00000000000000DC00000000000000DD00000000000000DE00000000000000DF00000000000000"> : tensor<1x224xi64>
    %c_2 = stablehlo.constant dense<0> : tensor<2x2xi64>
    %cst_3 = stablehlo.constant dense<1.562500e-02> : tensor<2x1xf32>
    %cst_4 = stablehlo.constant dense<2.000000e+00> : tensor<2x1x64xf32>
    %c_5 = stablehlo.constant dense<true> : tensor<i1>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_7 = stablehlo.constant dense<false> : tensor<i1>
    %c_8 = stablehlo.constant dense<[0, 1]> : tensor<2xi64>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg26, dims = [2] : (tensor<64xf32>) -> tensor<2x1x64xf32>
    %1 = stablehlo.convert %arg31 : (tensor<2xi64>) -> tensor<2xui32>
    %2 = "stablehlo.gather"(%arg10, %1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> : (tensor<128x64xf32>, tensor<2xui32>) -> tensor<2x64xf32>
    %3 = stablehlo.reshape %2 : (tensor<2x64xf32>) -> tensor<2x1x64xf32>
    %4 = stablehlo.broadcast_in_dim %arg11, dims = [2] : (tensor<64xf32>) -> tensor<2x1x64xf32>
    %5 = stablehlo.power %3, %cst_4 : tensor<2x1x64xf32>
    %6 = stablehlo.reduce(%5 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x64xf32>, tensor<f32>) -> tensor<2x1xf32>
    %7 = stablehlo.multiply %6, %cst_3 : tensor<2x1xf32>
    %8 = stablehlo.reshape %7 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %9 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x1x1xf32>
    %10 = stablehlo.add %8, %9 : tensor<2x1x1xf32>
    %11 = stablehlo.rsqrt %10 : tensor<2x1x1xf32>
    %12 = stablehlo.reshape %11 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x64xf32>
    %14 = stablehlo.multiply %3, %13 : tensor<2x1x64xf32>
    %15 = stablehlo.multiply %4, %14 : tensor<2x1x64xf32>
    %16 = stablehlo.reshape %15 : (tensor<2x1x64xf32>) -> tensor<2x64xf32>
    %17 = stablehlo.transpose %arg18, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %18 = stablehlo.dot_general %16, %17, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
    %19 = stablehlo.reshape %18 : (tensor<2x64xf32>) -> tensor<2x4x1x16xf32>
    %20 = stablehlo.reshape %arg32 : (tensor<2xi64>) -> tensor<2x1xi64>
    %21 = stablehlo.reshape %arg32 : (tensor<2xi64>) -> tensor<2x1x1xi64>
    %22 = stablehlo.convert %21 : (tensor<2x1x1xi64>) -> tensor<2x1x1xf32>
    %23 = stablehlo.reshape %22 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x8xf32>
    %25 = stablehlo.broadcast_in_dim %arg16, dims = [2] : (tensor<8xf32>) -> tensor<2x1x8xf32>
    %26 = stablehlo.multiply %24, %25 : tensor<2x1x8xf32>
    %27 = stablehlo.concatenate %26, %26, dim = 2 : (tensor<2x1x8xf32>, tensor<2x1x8xf32>) -> tensor<2x1x16xf32>
    %28 = stablehlo.cosine %27 : tensor<2x1x16xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [0, 2, 3] : (tensor<2x1x16xf32>) -> tensor<2x4x1x16xf32>
    %30 = stablehlo.multiply %19, %29 : tensor<2x4x1x16xf32>
    %31 = stablehlo.slice %19 [0:2, 0:4, 0:1, 8:16] : (tensor<2x4x1x16xf32>) -> tensor<2x4x1x8xf32>
    %32 = stablehlo.negate %31 : tensor<2x4x1x8xf32>
    %33 = stablehlo.slice %19 [0:2, 0:4, 0:1, 0:8] : (tensor<2x4x1x16xf32>) -> tensor<2x4x1x8xf32>
    %34 = stablehlo.concatenate %32, %33, dim = 3 : (tensor<2x4x1x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x1x16xf32>
    %35 = stablehlo.sine %27 : tensor<2x1x16xf32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [0, 2, 3] : (tensor<2x1x16xf32>) -> tensor<2x4x1x16xf32>
    %37 = stablehlo.multiply %34, %36 : tensor<2x4x1x16xf32>
    %38 = stablehlo.add %30, %37 : tensor<2x4x1x16xf32>
    %39 = stablehlo.reshape %38 : (tensor<2x4x1x16xf32>) -> tensor<2x2x2x16xf32>
    %40 = stablehlo.broadcast_in_dim %arg15, dims = [] : (tensor<f32>) -> tensor<2x2x2x16xf32>
    %41 = stablehlo.multiply %39, %40 : tensor<2x2x2x16xf32>
    %42 = stablehlo.reshape %41 : (tensor<2x2x2x16xf32>) -> tensor<4x2x16xf32>
    %43 = stablehlo.broadcast_in_dim %c_8, dims = [0] : (tensor<2xi64>) -> tensor<2x2xi64>
    %44 = stablehlo.compare  LT, %43, %c_2 : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
    %45 = stablehlo.broadcast_in_dim %arg13, dims = [] : (tensor<i64>) -> tensor<2x2xi64>
    %46 = stablehlo.add %43, %45 : tensor<2x2xi64>
    %47 = stablehlo.select %44, %46, %43 : tensor<2x2xi1>, tensor<2x2xi64>
    %48 = stablehlo.reshape %47 : (tensor<2x2xi64>) -> tensor<2x2x1xi64>
    %49 = stablehlo.broadcast_in_dim %c_8, dims = [1] : (tensor<2xi64>) -> tensor<2x2xi64>
    %50 = stablehlo.compare  LT, %49, %c_2 : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
    %51 = stablehlo.add %49, %45 : tensor<2x2xi64>
    %52 = stablehlo.select %50, %51, %49 : tensor<2x2xi1>, tensor<2x2xi64>
    %53 = stablehlo.reshape %52 : (tensor<2x2xi64>) -> tensor<2x2x1xi64>
    %54 = stablehlo.broadcast_in_dim %arg32, dims = [0] : (tensor<2xi64>) -> tensor<2x2xi64>
    %55 = stablehlo.compare  LT, %54, %c_2 : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
    %56 = stablehlo.broadcast_in_dim %arg12, dims = [] : (tensor<i64>) -> tensor<2x2xi64>
    %57 = stablehlo.add %54, %56 : tensor<2x2xi64>
    %58 = stablehlo.select %55, %57, %54 : tensor<2x2xi1>, tensor<2x2xi64>
    %59 = stablehlo.reshape %58 : (tensor<2x2xi64>) -> tensor<2x2x1xi64>
    %60 = stablehlo.concatenate %48, %53, %59, dim = 2 : (tensor<2x2x1xi64>, tensor<2x2x1xi64>, tensor<2x2x1xi64>) -> tensor<2x2x3xi64>
    %61 = stablehlo.transpose %arg17, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %62 = stablehlo.dot_general %16, %61, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x32xf32>) -> tensor<2x32xf32>
    %63 = stablehlo.reshape %62 : (tensor<2x32xf32>) -> tensor<2x2x1x16xf32>
    %64 = stablehlo.broadcast_in_dim %28, dims = [0, 2, 3] : (tensor<2x1x16xf32>) -> tensor<2x2x1x16xf32>
    %65 = stablehlo.multiply %63, %64 : tensor<2x2x1x16xf32>
    %66 = stablehlo.slice %63 [0:2, 0:2, 0:1, 8:16] : (tensor<2x2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %67 = stablehlo.negate %66 : tensor<2x2x1x8xf32>
    %68 = stablehlo.slice %63 [0:2, 0:2, 0:1, 0:8] : (tensor<2x2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %69 = stablehlo.concatenate %67, %68, dim = 3 : (tensor<2x2x1x8xf32>, tensor<2x2x1x8xf32>) -> tensor<2x2x1x16xf32>
    %70 = stablehlo.broadcast_in_dim %35, dims = [0, 2, 3] : (tensor<2x1x16xf32>) -> tensor<2x2x1x16xf32>
    %71 = stablehlo.multiply %69, %70 : tensor<2x2x1x16xf32>
    %72 = stablehlo.add %65, %71 : tensor<2x2x1x16xf32>
    %73 = stablehlo.reshape %72 : (tensor<2x2x1x16xf32>) -> tensor<2x2x16xf32>
    %74 = "stablehlo.scatter"(%arg27, %60, %73) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [0, 1, 2], scatter_dims_to_operand_dims = [0, 1, 2], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<2x2x3xi64>, tensor<2x2x16xf32>) -> tensor<2x2x224x16xf32>
    %75 = stablehlo.transpose %74, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,224]{2,3,1,0}"} : (tensor<2x2x224x16xf32>) -> tensor<2x2x16x224xf32>
    %76 = stablehlo.broadcast_in_dim %arg15, dims = [] : (tensor<f32>) -> tensor<2x2x16x224xf32>
    %77 = stablehlo.multiply %75, %76 : tensor<2x2x16x224xf32>
    %78 = stablehlo.reshape %77 : (tensor<2x2x16x224xf32>) -> tensor<4x16x224xf32>
    %79 = stablehlo.dot_general %42, %78, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x16xf32>, tensor<4x16x224xf32>) -> tensor<4x2x224xf32>
    %80 = stablehlo.reshape %79 : (tensor<4x2x224xf32>) -> tensor<2x2x2x224xf32>
    %81 = stablehlo.broadcast_in_dim %c, dims = [1, 2] : (tensor<1x224xi64>) -> tensor<2x1x224xi64>
    %82 = stablehlo.broadcast_in_dim %20, dims = [0, 1] : (tensor<2x1xi64>) -> tensor<2x1x224xi64>
    %83 = stablehlo.compare  LE, %81, %82 : (tensor<2x1x224xi64>, tensor<2x1x224xi64>) -> tensor<2x1x224xi1>
    %84 = stablehlo.convert %arg14 : (tensor<f64>) -> tensor<f32>
    %85 = stablehlo.broadcast_in_dim %84, dims = [] : (tensor<f32>) -> tensor<2x1x224xf32>
    %86 = stablehlo.select %83, %cst_1, %85 : tensor<2x1x224xi1>, tensor<2x1x224xf32>
    %87 = stablehlo.reshape %86 : (tensor<2x1x224xf32>) -> tensor<2x224xf32>
    %88 = stablehlo.broadcast_in_dim %87, dims = [0, 3] : (tensor<2x224xf32>) -> tensor<2x2x2x224xf32>
    %89 = stablehlo.add %80, %88 : tensor<2x2x2x224xf32>
    %90 = stablehlo.compare  EQ, %89, %cst_0 : (tensor<2x2x2x224xf32>, tensor<2x2x2x224xf32>) -> tensor<2x2x2x224xi1>
    %91 = stablehlo.reduce(%90 init: %c_5) across dimensions = [3] : (tensor<2x2x2x224xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg33: tensor<i1>, %arg34: tensor<i1>)  {
      %244 = stablehlo.and %arg33, %arg34 : tensor<i1>
      %245 = stablehlo.select %244, %c_5, %c_7 : tensor<i1>, tensor<i1>
      stablehlo.return %245 : tensor<i1>
    }
    %92 = stablehlo.broadcast_in_dim %91, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x224xi1>
    %93 = stablehlo.reduce(%89 init: %cst_6) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x224xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %94 = stablehlo.broadcast_in_dim %93, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x224xf32>
    %95 = stablehlo.subtract %89, %94 : tensor<2x2x2x224xf32>
    %96 = stablehlo.exponential %95 : tensor<2x2x2x224xf32>
    %97 = stablehlo.reduce(%96 init: %cst_9) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x224xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %98 = stablehlo.broadcast_in_dim %97, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x224xf32>
    %99 = stablehlo.divide %96, %98 : tensor<2x2x2x224xf32>
    %100 = stablehlo.select %92, %cst, %99 : tensor<2x2x2x224xi1>, tensor<2x2x2x224xf32>
    %101 = stablehlo.reshape %100 : (tensor<2x2x2x224xf32>) -> tensor<4x2x224xf32>
    %102 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %103 = stablehlo.dot_general %16, %102, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x32xf32>) -> tensor<2x32xf32>
    %104 = stablehlo.reshape %103 : (tensor<2x32xf32>) -> tensor<2x2x16xf32>
    %105 = "stablehlo.scatter"(%arg28, %60, %104) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [0, 1, 2], scatter_dims_to_operand_dims = [0, 1, 2], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<2x2x3xi64>, tensor<2x2x16xf32>) -> tensor<2x2x224x16xf32>
    %106 = stablehlo.reshape %105 : (tensor<2x2x224x16xf32>) -> tensor<4x224x16xf32>
    %107 = stablehlo.dot_general %101, %106, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x224xf32>, tensor<4x224x16xf32>) -> tensor<4x2x16xf32>
    %108 = stablehlo.reshape %107 : (tensor<4x2x16xf32>) -> tensor<2x64xf32>
    %109 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %110 = stablehlo.dot_general %108, %109, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
    %111 = stablehlo.reshape %110 : (tensor<2x64xf32>) -> tensor<2x1x64xf32>
    %112 = stablehlo.add %3, %111 : tensor<2x1x64xf32>
    %113 = stablehlo.broadcast_in_dim %arg19, dims = [2] : (tensor<64xf32>) -> tensor<2x1x64xf32>
    %114 = stablehlo.power %112, %cst_4 : tensor<2x1x64xf32>
    %115 = stablehlo.reduce(%114 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x64xf32>, tensor<f32>) -> tensor<2x1xf32>
    %116 = stablehlo.multiply %115, %cst_3 : tensor<2x1xf32>
    %117 = stablehlo.reshape %116 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %118 = stablehlo.add %117, %9 : tensor<2x1x1xf32>
    %119 = stablehlo.rsqrt %118 : tensor<2x1x1xf32>
    %120 = stablehlo.reshape %119 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %121 = stablehlo.broadcast_in_dim %120, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x64xf32>
    %122 = stablehlo.multiply %112, %121 : tensor<2x1x64xf32>
    %123 = stablehlo.multiply %113, %122 : tensor<2x1x64xf32>
    %124 = stablehlo.reshape %123 : (tensor<2x1x64xf32>) -> tensor<2x64xf32>
    %125 = stablehlo.transpose %arg20, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %126 = stablehlo.dot_general %124, %125, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x128xf32>) -> tensor<2x128xf32>
    %127 = stablehlo.reshape %126 : (tensor<2x128xf32>) -> tensor<2x1x128xf32>
    %128 = stablehlo.logistic %127 : tensor<2x1x128xf32>
    %129 = stablehlo.multiply %127, %128 : tensor<2x1x128xf32>
    %130 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %131 = stablehlo.dot_general %124, %130, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x128xf32>) -> tensor<2x128xf32>
    %132 = stablehlo.reshape %131 : (tensor<2x128xf32>) -> tensor<2x1x128xf32>
    %133 = stablehlo.multiply %129, %132 : tensor<2x1x128xf32>
    %134 = stablehlo.reshape %133 : (tensor<2x1x128xf32>) -> tensor<2x128xf32>
    %135 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[128,64]{0,1}"} : (tensor<64x128xf32>) -> tensor<128x64xf32>
    %136 = stablehlo.dot_general %134, %135, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x128xf32>, tensor<128x64xf32>) -> tensor<2x64xf32>
    %137 = stablehlo.reshape %136 : (tensor<2x64xf32>) -> tensor<2x1x64xf32>
    %138 = stablehlo.add %112, %137 : tensor<2x1x64xf32>
    %139 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<64xf32>) -> tensor<2x1x64xf32>
    %140 = stablehlo.power %138, %cst_4 : tensor<2x1x64xf32>
    %141 = stablehlo.reduce(%140 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x64xf32>, tensor<f32>) -> tensor<2x1xf32>
    %142 = stablehlo.multiply %141, %cst_3 : tensor<2x1xf32>
    %143 = stablehlo.reshape %142 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %144 = stablehlo.add %143, %9 : tensor<2x1x1xf32>
    %145 = stablehlo.rsqrt %144 : tensor<2x1x1xf32>
    %146 = stablehlo.reshape %145 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %147 = stablehlo.broadcast_in_dim %146, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x64xf32>
    %148 = stablehlo.multiply %138, %147 : tensor<2x1x64xf32>
    %149 = stablehlo.multiply %139, %148 : tensor<2x1x64xf32>
    %150 = stablehlo.reshape %149 : (tensor<2x1x64xf32>) -> tensor<2x64xf32>
    %151 = stablehlo.transpose %arg23, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %152 = stablehlo.dot_general %150, %151, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
    %153 = stablehlo.reshape %152 : (tensor<2x64xf32>) -> tensor<2x4x1x16xf32>
    %154 = stablehlo.multiply %153, %29 : tensor<2x4x1x16xf32>
    %155 = stablehlo.slice %153 [0:2, 0:4, 0:1, 8:16] : (tensor<2x4x1x16xf32>) -> tensor<2x4x1x8xf32>
    %156 = stablehlo.negate %155 : tensor<2x4x1x8xf32>
    %157 = stablehlo.slice %153 [0:2, 0:4, 0:1, 0:8] : (tensor<2x4x1x16xf32>) -> tensor<2x4x1x8xf32>
    %158 = stablehlo.concatenate %156, %157, dim = 3 : (tensor<2x4x1x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x1x16xf32>
    %159 = stablehlo.multiply %158, %36 : tensor<2x4x1x16xf32>
    %160 = stablehlo.add %154, %159 : tensor<2x4x1x16xf32>
    %161 = stablehlo.reshape %160 : (tensor<2x4x1x16xf32>) -> tensor<2x2x2x16xf32>
    %162 = stablehlo.multiply %161, %40 : tensor<2x2x2x16xf32>
    %163 = stablehlo.reshape %162 : (tensor<2x2x2x16xf32>) -> tensor<4x2x16xf32>
    %164 = stablehlo.transpose %arg22, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %165 = stablehlo.dot_general %150, %164, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x32xf32>) -> tensor<2x32xf32>
    %166 = stablehlo.reshape %165 : (tensor<2x32xf32>) -> tensor<2x2x1x16xf32>
    %167 = stablehlo.multiply %166, %64 : tensor<2x2x1x16xf32>
    %168 = stablehlo.slice %166 [0:2, 0:2, 0:1, 8:16] : (tensor<2x2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %169 = stablehlo.negate %168 : tensor<2x2x1x8xf32>
    %170 = stablehlo.slice %166 [0:2, 0:2, 0:1, 0:8] : (tensor<2x2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %171 = stablehlo.concatenate %169, %170, dim = 3 : (tensor<2x2x1x8xf32>, tensor<2x2x1x8xf32>) -> tensor<2x2x1x16xf32>
    %172 = stablehlo.multiply %171, %70 : tensor<2x2x1x16xf32>
    %173 = stablehlo.add %167, %172 : tensor<2x2x1x16xf32>
    %174 = stablehlo.reshape %173 : (tensor<2x2x1x16xf32>) -> tensor<2x2x16xf32>
    %175 = "stablehlo.scatter"(%arg29, %60, %174) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [0, 1, 2], scatter_dims_to_operand_dims = [0, 1, 2], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<2x2x3xi64>, tensor<2x2x16xf32>) -> tensor<2x2x224x16xf32>
    %176 = stablehlo.transpose %175, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,16,224]{2,3,1,0}"} : (tensor<2x2x224x16xf32>) -> tensor<2x2x16x224xf32>
    %177 = stablehlo.multiply %176, %76 : tensor<2x2x16x224xf32>
    %178 = stablehlo.reshape %177 : (tensor<2x2x16x224xf32>) -> tensor<4x16x224xf32>
    %179 = stablehlo.dot_general %163, %178, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x16xf32>, tensor<4x16x224xf32>) -> tensor<4x2x224xf32>
    %180 = stablehlo.reshape %179 : (tensor<4x2x224xf32>) -> tensor<2x2x2x224xf32>
    %181 = stablehlo.add %180, %88 : tensor<2x2x2x224xf32>
    %182 = stablehlo.compare  EQ, %181, %cst_0 : (tensor<2x2x2x224xf32>, tensor<2x2x2x224xf32>) -> tensor<2x2x2x224xi1>
    %183 = stablehlo.reduce(%182 init: %c_5) across dimensions = [3] : (tensor<2x2x2x224xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg33: tensor<i1>, %arg34: tensor<i1>)  {
      %244 = stablehlo.and %arg33, %arg34 : tensor<i1>
      %245 = stablehlo.select %244, %c_5, %c_7 : tensor<i1>, tensor<i1>
      stablehlo.return %245 : tensor<i1>
    }
    %184 = stablehlo.broadcast_in_dim %183, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x224xi1>
    %185 = stablehlo.reduce(%181 init: %cst_6) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x224xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %186 = stablehlo.broadcast_in_dim %185, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x224xf32>
    %187 = stablehlo.subtract %181, %186 : tensor<2x2x2x224xf32>
    %188 = stablehlo.exponential %187 : tensor<2x2x2x224xf32>
    %189 = stablehlo.reduce(%188 init: %cst_9) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x224xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %190 = stablehlo.broadcast_in_dim %189, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x224xf32>
    %191 = stablehlo.divide %188, %190 : tensor<2x2x2x224xf32>
    %192 = stablehlo.select %184, %cst, %191 : tensor<2x2x2x224xi1>, tensor<2x2x2x224xf32>
    %193 = stablehlo.reshape %192 : (tensor<2x2x2x224xf32>) -> tensor<4x2x224xf32>
    %194 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,32]{0,1}"} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %195 = stablehlo.dot_general %150, %194, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x32xf32>) -> tensor<2x32xf32>
    %196 = stablehlo.reshape %195 : (tensor<2x32xf32>) -> tensor<2x2x16xf32>
    %197 = "stablehlo.scatter"(%arg30, %60, %196) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [0, 1, 2], scatter_dims_to_operand_dims = [0, 1, 2], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg33: tensor<f32>, %arg34: tensor<f32>):
      stablehlo.return %arg34 : tensor<f32>
    }) : (tensor<2x2x224x16xf32>, tensor<2x2x3xi64>, tensor<2x2x16xf32>) -> tensor<2x2x224x16xf32>
    %198 = stablehlo.reshape %197 : (tensor<2x2x224x16xf32>) -> tensor<4x224x16xf32>
    %199 = stablehlo.dot_general %193, %198, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x224xf32>, tensor<4x224x16xf32>) -> tensor<4x2x16xf32>
    %200 = stablehlo.reshape %199 : (tensor<4x2x16xf32>) -> tensor<2x64xf32>
    %201 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,64]{0,1}"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %202 = stablehlo.dot_general %200, %201, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
    %203 = stablehlo.reshape %202 : (tensor<2x64xf32>) -> tensor<2x1x64xf32>
    %204 = stablehlo.add %138, %203 : tensor<2x1x64xf32>
    %205 = stablehlo.broadcast_in_dim %arg24, dims = [2] : (tensor<64xf32>) -> tensor<2x1x64xf32>
    %206 = stablehlo.power %204, %cst_4 : tensor<2x1x64xf32>
    %207 = stablehlo.reduce(%206 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x64xf32>, tensor<f32>) -> tensor<2x1xf32>
    %208 = stablehlo.multiply %207, %cst_3 : tensor<2x1xf32>
    %209 = stablehlo.reshape %208 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %210 = stablehlo.add %209, %9 : tensor<2x1x1xf32>
    %211 = stablehlo.rsqrt %210 : tensor<2x1x1xf32>
    %212 = stablehlo.reshape %211 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %213 = stablehlo.broadcast_in_dim %212, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x64xf32>
    %214 = stablehlo.multiply %204, %213 : tensor<2x1x64xf32>
    %215 = stablehlo.multiply %205, %214 : tensor<2x1x64xf32>
    %216 = stablehlo.reshape %215 : (tensor<2x1x64xf32>) -> tensor<2x64xf32>
    %217 = stablehlo.transpose %arg25, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %218 = stablehlo.dot_general %216, %217, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x128xf32>) -> tensor<2x128xf32>
    %219 = stablehlo.reshape %218 : (tensor<2x128xf32>) -> tensor<2x1x128xf32>
    %220 = stablehlo.logistic %219 : tensor<2x1x128xf32>
    %221 = stablehlo.multiply %219, %220 : tensor<2x1x128xf32>
    %222 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %223 = stablehlo.dot_general %216, %222, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x128xf32>) -> tensor<2x128xf32>
    %224 = stablehlo.reshape %223 : (tensor<2x128xf32>) -> tensor<2x1x128xf32>
    %225 = stablehlo.multiply %221, %224 : tensor<2x1x128xf32>
    %226 = stablehlo.reshape %225 : (tensor<2x1x128xf32>) -> tensor<2x128xf32>
    %227 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[128,64]{0,1}"} : (tensor<64x128xf32>) -> tensor<128x64xf32>
    %228 = stablehlo.dot_general %226, %227, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x128xf32>, tensor<128x64xf32>) -> tensor<2x64xf32>
    %229 = stablehlo.reshape %228 : (tensor<2x64xf32>) -> tensor<2x1x64xf32>
    %230 = stablehlo.add %204, %229 : tensor<2x1x64xf32>
    %231 = stablehlo.power %230, %cst_4 : tensor<2x1x64xf32>
    %232 = stablehlo.reduce(%231 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x64xf32>, tensor<f32>) -> tensor<2x1xf32>
    %233 = stablehlo.multiply %232, %cst_3 : tensor<2x1xf32>
    %234 = stablehlo.reshape %233 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %235 = stablehlo.add %234, %9 : tensor<2x1x1xf32>
    %236 = stablehlo.rsqrt %235 : tensor<2x1x1xf32>
    %237 = stablehlo.reshape %236 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %238 = stablehlo.broadcast_in_dim %237, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x64xf32>
    %239 = stablehlo.multiply %230, %238 : tensor<2x1x64xf32>
    %240 = stablehlo.multiply %0, %239 : tensor<2x1x64xf32>
    %241 = stablehlo.reshape %240 : (tensor<2x1x64xf32>) -> tensor<2x64xf32>
    %242 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[64,128]{0,1}"} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %243 = stablehlo.dot_general %241, %242, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x128xf32>) -> tensor<2x128xf32>
    return %243, %74, %105, %175, %197 : tensor<2x128xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>, tensor<2x2x224x16xf32>
  }
}
