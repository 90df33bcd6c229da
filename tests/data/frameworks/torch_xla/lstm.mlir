module @IrToHlo.383 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<2x4xi64>, %arg1: tensor<16xf32>, %arg2: tensor<16x3xf32>, %arg3: tensor<5x2x3xf32>, %arg4: tensor<16xf32>, %arg5: tensor<16x4xf32>, %arg6: tensor<2x4xi64>, %arg7: tensor<2x4xi64>, %arg8: tensor<2x4xi64>, %arg9: tensor<2x4xi64>, %arg10: tensor<1x2x4xf32>, %arg11: tensor<1x2x4xf32>, %arg12: tensor<2x4xi64>, %arg13: tensor<2x4xi64>, %arg14: tensor<2x4xi64>, %arg15: tensor<2x4xi64>, %arg16: tensor<2x4xi64>, %arg17: tensor<2x4xi64>, %arg18: tensor<2x4xi64>, %arg19: tensor<2x4xi64>, %arg20: tensor<2x4xi64>, %arg21: tensor<2x4xi64>) -> (tensor<5x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) {
    %c = stablehlo.constant dense<32> : tensor<8xi64>
    %c_0 = stablehlo.constant dense<0> : tensor<8xi64>
    %0 = stablehlo.reshape %arg10 : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
    %1 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[4,16]{0,1}"} : (tensor<16x4xf32>) -> tensor<4x16xf32>
    %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
    %3 = stablehlo.broadcast_in_dim %arg4, dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
    %4 = stablehlo.add %2, %3 : tensor<2x16xf32>
    %5 = stablehlo.slice %arg3 [0:1, 0:2, 0:3] : (tensor<5x2x3xf32>) -> tensor<1x2x3xf32>
    %6 = stablehlo.reshape %5 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
    %7 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[3,16]{0,1}"} : (tensor<16x3xf32>) -> tensor<3x16xf32>
    %8 = stablehlo.dot_general %6, %7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x16xf32>) -> tensor<2x16xf32>
    %9 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
    %10 = stablehlo.add %8, %9 : tensor<2x16xf32>
    %11 = stablehlo.add %4, %10 : tensor<2x16xf32>
    %12 = stablehlo.reshape %11 : (tensor<2x16xf32>) -> tensor<32xf32>
    %13 = stablehlo.reshape %arg13 : (tensor<2x4xi64>) -> tensor<8xi64>
    %14 = stablehlo.compare  GE, %13, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %15 = stablehlo.add %13, %c : tensor<8xi64>
    %16 = stablehlo.select %14, %13, %15 : tensor<8xi1>, tensor<8xi64>
    %17 = stablehlo.convert %16 : (tensor<8xi64>) -> tensor<8xui32>
    %18 = "stablehlo.gather"(%12, %17) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %19 = stablehlo.reshape %18 : (tensor<8xf32>) -> tensor<2x4xf32>
    %20 = stablehlo.logistic %19 : tensor<2x4xf32>
    %21 = stablehlo.reshape %arg12 : (tensor<2x4xi64>) -> tensor<8xi64>
    %22 = stablehlo.compare  GE, %21, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %23 = stablehlo.add %21, %c : tensor<8xi64>
    %24 = stablehlo.select %22, %21, %23 : tensor<8xi1>, tensor<8xi64>
    %25 = stablehlo.convert %24 : (tensor<8xi64>) -> tensor<8xui32>
    %26 = "stablehlo.gather"(%12, %25) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %27 = stablehlo.reshape %26 : (tensor<8xf32>) -> tensor<2x4xf32>
    %28 = stablehlo.logistic %27 : tensor<2x4xf32>
    %29 = stablehlo.reshape %arg11 : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
    %30 = stablehlo.multiply %28, %29 : tensor<2x4xf32>
    %31 = stablehlo.slice %11 [0:2, 0:4] : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %32 = stablehlo.logistic %31 : tensor<2x4xf32>
    %33 = stablehlo.reshape %arg9 : (tensor<2x4xi64>) -> tensor<8xi64>
    %34 = stablehlo.compare  GE, %33, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %35 = stablehlo.add %33, %c : tensor<8xi64>
    %36 = stablehlo.select %34, %33, %35 : tensor<8xi1>, tensor<8xi64>
    %37 = stablehlo.convert %36 : (tensor<8xi64>) -> tensor<8xui32>
    %38 = "stablehlo.gather"(%12, %37) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %39 = stablehlo.reshape %38 : (tensor<8xf32>) -> tensor<2x4xf32>
    %40 = stablehlo.tanh %39 : tensor<2x4xf32>
    %41 = stablehlo.multiply %32, %40 : tensor<2x4xf32>
    %42 = stablehlo.add %30, %41 : tensor<2x4xf32>
    %43 = stablehlo.tanh %42 : tensor<2x4xf32>
    %44 = stablehlo.multiply %20, %43 : tensor<2x4xf32>
    %45 = stablehlo.reshape %44 : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
    %46 = stablehlo.dot_general %44, %1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
    %47 = stablehlo.add %46, %3 : tensor<2x16xf32>
    %48 = stablehlo.slice %arg3 [1:2, 0:2, 0:3] : (tensor<5x2x3xf32>) -> tensor<1x2x3xf32>
    %49 = stablehlo.reshape %48 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
    %50 = stablehlo.dot_general %49, %7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x16xf32>) -> tensor<2x16xf32>
    %51 = stablehlo.add %50, %9 : tensor<2x16xf32>
    %52 = stablehlo.add %47, %51 : tensor<2x16xf32>
    %53 = stablehlo.reshape %52 : (tensor<2x16xf32>) -> tensor<32xf32>
    %54 = stablehlo.reshape %arg15 : (tensor<2x4xi64>) -> tensor<8xi64>
    %55 = stablehlo.compare  GE, %54, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %56 = stablehlo.add %54, %c : tensor<8xi64>
    %57 = stablehlo.select %55, %54, %56 : tensor<8xi1>, tensor<8xi64>
    %58 = stablehlo.convert %57 : (tensor<8xi64>) -> tensor<8xui32>
    %59 = "stablehlo.gather"(%53, %58) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %60 = stablehlo.reshape %59 : (tensor<8xf32>) -> tensor<2x4xf32>
    %61 = stablehlo.logistic %60 : tensor<2x4xf32>
    %62 = stablehlo.reshape %arg14 : (tensor<2x4xi64>) -> tensor<8xi64>
    %63 = stablehlo.compare  GE, %62, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %64 = stablehlo.add %62, %c : tensor<8xi64>
    %65 = stablehlo.select %63, %62, %64 : tensor<8xi1>, tensor<8xi64>
    %66 = stablehlo.convert %65 : (tensor<8xi64>) -> tensor<8xui32>
    %67 = "stablehlo.gather"(%53, %66) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %68 = stablehlo.reshape %67 : (tensor<8xf32>) -> tensor<2x4xf32>
    %69 = stablehlo.logistic %68 : tensor<2x4xf32>
    %70 = stablehlo.multiply %69, %42 : tensor<2x4xf32>
    %71 = stablehlo.slice %52 [0:2, 0:4] : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %72 = stablehlo.logistic %71 : tensor<2x4xf32>
    %73 = stablehlo.reshape %arg8 : (tensor<2x4xi64>) -> tensor<8xi64>
    %74 = stablehlo.compare  GE, %73, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %75 = stablehlo.add %73, %c : tensor<8xi64>
    %76 = stablehlo.select %74, %73, %75 : tensor<8xi1>, tensor<8xi64>
    %77 = stablehlo.convert %76 : (tensor<8xi64>) -> tensor<8xui32>
    %78 = "stablehlo.gather"(%53, %77) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %79 = stablehlo.reshape %78 : (tensor<8xf32>) -> tensor<2x4xf32>
    %80 = stablehlo.tanh %79 : tensor<2x4xf32>
    %81 = stablehlo.multiply %72, %80 : tensor<2x4xf32>
    %82 = stablehlo.add %70, %81 : tensor<2x4xf32>
    %83 = stablehlo.tanh %82 : tensor<2x4xf32>
    %84 = stablehlo.multiply %61, %83 : tensor<2x4xf32>
    %85 = stablehlo.reshape %84 : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
    %86 = stablehlo.dot_general %84, %1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
    %87 = stablehlo.add %86, %3 : tensor<2x16xf32>
    %88 = stablehlo.slice %arg3 [2:3, 0:2, 0:3] : (tensor<5x2x3xf32>) -> tensor<1x2x3xf32>
    %89 = stablehlo.reshape %88 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
    %90 = stablehlo.dot_general %89, %7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x16xf32>) -> tensor<2x16xf32>
    %91 = stablehlo.add %90, %9 : tensor<2x16xf32>
    %92 = stablehlo.add %87, %91 : tensor<2x16xf32>
    %93 = stablehlo.reshape %92 : (tensor<2x16xf32>) -> tensor<32xf32>
    %94 = stablehlo.reshape %arg17 : (tensor<2x4xi64>) -> tensor<8xi64>
    %95 = stablehlo.compare  GE, %94, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %96 = stablehlo.add %94, %c : tensor<8xi64>
    %97 = stablehlo.select %95, %94, %96 : tensor<8xi1>, tensor<8xi64>
    %98 = stablehlo.convert %97 : (tensor<8xi64>) -> tensor<8xui32>
    %99 = "stablehlo.gather"(%93, %98) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %100 = stablehlo.reshape %99 : (tensor<8xf32>) -> tensor<2x4xf32>
    %101 = stablehlo.logistic %100 : tensor<2x4xf32>
    %102 = stablehlo.reshape %arg16 : (tensor<2x4xi64>) -> tensor<8xi64>
    %103 = stablehlo.compare  GE, %102, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %104 = stablehlo.add %102, %c : tensor<8xi64>
    %105 = stablehlo.select %103, %102, %104 : tensor<8xi1>, tensor<8xi64>
    %106 = stablehlo.convert %105 : (tensor<8xi64>) -> tensor<8xui32>
    %107 = "stablehlo.gather"(%93, %106) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %108 = stablehlo.reshape %107 : (tensor<8xf32>) -> tensor<2x4xf32>
    %109 = stablehlo.logistic %108 : tensor<2x4xf32>
    %110 = stablehlo.multiply %109, %82 : tensor<2x4xf32>
    %111 = stablehlo.slice %92 [0:2, 0:4] : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %112 = stablehlo.logistic %111 : tensor<2x4xf32>
    %113 = stablehlo.reshape %arg7 : (tensor<2x4xi64>) -> tensor<8xi64>
    %114 = stablehlo.compare  GE, %113, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %115 = stablehlo.add %113, %c : tensor<8xi64>
    %116 = stablehlo.select %114, %113, %115 : tensor<8xi1>, tensor<8xi64>
    %117 = stablehlo.convert %116 : (tensor<8xi64>) -> tensor<8xui32>
    %118 = "stablehlo.gather"(%93, %117) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %119 = stablehlo.reshape %118 : (tensor<8xf32>) -> tensor<2x4xf32>
    %120 = stablehlo.tanh %119 : tensor<2x4xf32>
    %121 = stablehlo.multiply %112, %120 : tensor<2x4xf32>
    %122 = stablehlo.add %110, %121 : tensor<2x4xf32>
    %123 = stablehlo.tanh %122 : tensor<2x4xf32>
    %124 = stablehlo.multiply %101, %123 : tensor<2x4xf32>
    %125 = stablehlo.reshape %124 : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
    %126 = stablehlo.dot_general %124, %1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
    %127 = stablehlo.add %126, %3 : tensor<2x16xf32>
    %128 = stablehlo.slice %arg3 [3:4, 0:2, 0:3] : (tensor<5x2x3xf32>) -> tensor<1x2x3xf32>
    %129 = stablehlo.reshape %128 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
    %130 = stablehlo.dot_general %129, %7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x16xf32>) -> tensor<2x16xf32>
    %131 = stablehlo.add %130, %9 : tensor<2x16xf32>
    %132 = stablehlo.add %127, %131 : tensor<2x16xf32>
    %133 = stablehlo.reshape %132 : (tensor<2x16xf32>) -> tensor<32xf32>
    %134 = stablehlo.reshape %arg19 : (tensor<2x4xi64>) -> tensor<8xi64>
    %135 = stablehlo.compare  GE, %134, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %136 = stablehlo.add %134, %c : tensor<8xi64>
    %137 = stablehlo.select %135, %134, %136 : tensor<8xi1>, tensor<8xi64>
    %138 = stablehlo.convert %137 : (tensor<8xi64>) -> tensor<8xui32>
    %139 = "stablehlo.gather"(%133, %138) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %140 = stablehlo.reshape %139 : (tensor<8xf32>) -> tensor<2x4xf32>
    %141 = stablehlo.logistic %140 : tensor<2x4xf32>
    %142 = stablehlo.reshape %arg18 : (tensor<2x4xi64>) -> tensor<8xi64>
    %143 = stablehlo.compare  GE, %142, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %144 = stablehlo.add %142, %c : tensor<8xi64>
    %145 = stablehlo.select %143, %142, %144 : tensor<8xi1>, tensor<8xi64>
    %146 = stablehlo.convert %145 : (tensor<8xi64>) -> tensor<8xui32>
    %147 = "stablehlo.gather"(%133, %146) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %148 = stablehlo.reshape %147 : (tensor<8xf32>) -> tensor<2x4xf32>
    %149 = stablehlo.logistic %148 : tensor<2x4xf32>
    %150 = stablehlo.multiply %149, %122 : tensor<2x4xf32>
    %151 = stablehlo.slice %132 [0:2, 0:4] : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %152 = stablehlo.logistic %151 : tensor<2x4xf32>
    %153 = stablehlo.reshape %arg6 : (tensor<2x4xi64>) -> tensor<8xi64>
    %154 = stablehlo.compare  GE, %153, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %155 = stablehlo.add %153, %c : tensor<8xi64>
    %156 = stablehlo.select %154, %153, %155 : tensor<8xi1>, tensor<8xi64>
    %157 = stablehlo.convert %156 : (tensor<8xi64>) -> tensor<8xui32>
    %158 = "stablehlo.gather"(%133, %157) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %159 = stablehlo.reshape %158 : (tensor<8xf32>) -> tensor<2x4xf32>
    %160 = stablehlo.tanh %159 : tensor<2x4xf32>
    %161 = stablehlo.multiply %152, %160 : tensor<2x4xf32>
    %162 = stablehlo.add %150, %161 : tensor<2x4xf32>
    %163 = stablehlo.tanh %162 : tensor<2x4xf32>
    %164 = stablehlo.multiply %141, %163 : tensor<2x4xf32>
    %165 = stablehlo.reshape %164 : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
    %166 = stablehlo.dot_general %164, %1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
    %167 = stablehlo.add %166, %3 : tensor<2x16xf32>
    %168 = stablehlo.slice %arg3 [4:5, 0:2, 0:3] : (tensor<5x2x3xf32>) -> tensor<1x2x3xf32>
    %169 = stablehlo.reshape %168 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
    %170 = stablehlo.dot_general %169, %7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x16xf32>) -> tensor<2x16xf32>
    %171 = stablehlo.add %170, %9 : tensor<2x16xf32>
    %172 = stablehlo.add %167, %171 : tensor<2x16xf32>
    %173 = stablehlo.reshape %172 : (tensor<2x16xf32>) -> tensor<32xf32>
    %174 = stablehlo.reshape %arg21 : (tensor<2x4xi64>) -> tensor<8xi64>
    %175 = stablehlo.compare  GE, %174, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %176 = stablehlo.add %174, %c : tensor<8xi64>
    %177 = stablehlo.select %175, %174, %176 : tensor<8xi1>, tensor<8xi64>
    %178 = stablehlo.convert %177 : (tensor<8xi64>) -> tensor<8xui32>
    %179 = "stablehlo.gather"(%173, %178) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %180 = stablehlo.reshape %179 : (tensor<8xf32>) -> tensor<2x4xf32>
    %181 = stablehlo.logistic %180 : tensor<2x4xf32>
    %182 = stablehlo.reshape %arg20 : (tensor<2x4xi64>) -> tensor<8xi64>
    %183 = stablehlo.compare  GE, %182, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %184 = stablehlo.add %182, %c : tensor<8xi64>
    %185 = stablehlo.select %183, %182, %184 : tensor<8xi1>, tensor<8xi64>
    %186 = stablehlo.convert %185 : (tensor<8xi64>) -> tensor<8xui32>
    %187 = "stablehlo.gather"(%173, %186) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %188 = stablehlo.reshape %187 : (tensor<8xf32>) -> tensor<2x4xf32>
    %189 = stablehlo.logistic %188 : tensor<2x4xf32>
    %190 = stablehlo.multiply %189, %162 : tensor<2x4xf32>
    %191 = stablehlo.slice %172 [0:2, 0:4] : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %192 = stablehlo.logistic %191 : tensor<2x4xf32>
    %193 = stablehlo.reshape %arg0 : (tensor<2x4xi64>) -> tensor<8xi64>
    %194 = stablehlo.compare  GE, %193, %c_0 : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %195 = stablehlo.add %193, %c : tensor<8xi64>
    %196 = stablehlo.select %194, %193, %195 : tensor<8xi1>, tensor<8xi64>
    %197 = stablehlo.convert %196 : (tensor<8xi64>) -> tensor<8xui32>
    %198 = "stablehlo.gather"(%173, %197) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<32xf32>, tensor<8xui32>) -> tensor<8xf32>
    %199 = stablehlo.reshape %198 : (tensor<8xf32>) -> tensor<2x4xf32>
    %200 = stablehlo.tanh %199 : tensor<2x4xf32>
    %201 = stablehlo.multiply %192, %200 : tensor<2x4xf32>
    %202 = stablehlo.add %190, %201 : tensor<2x4xf32>
    %203 = stablehlo.tanh %202 : tensor<2x4xf32>
    %204 = stablehlo.multiply %181, %203 : tensor<2x4xf32>
    %205 = stablehlo.reshape %204 : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
    %206 = stablehlo.concatenate %45, %85, %125, %165, %205, dim = 0 : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<5x2x4xf32>
    %207 = stablehlo.reshape %202 : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
    return %206, %205, %207 : tensor<5x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  }
}
