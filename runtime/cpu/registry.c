/* The CPU backend's kernel table, filled once from the family registrars. */
#include "../runtime.h"
#include <pthread.h>

lt_kernel_fn lt_cpu_kernels[LT_OP_COUNT];

/* ops of onnx 1.15-1.23: Attention, RotaryEmbedding, TensorScatter
 * (attention.c), CumProd, BitCast, AffineGrid, CausalConvWithState,
 * LinearAttention, DeformConv, FlexAttention, ImageDecoder, the ai.onnx.ml
 * ops (their own files), the string ops and Equal on strings
 * (string_ops.c, after the elementwise family, whose Equal it wraps) */
void lt_cpu_register_attention(lt_kernel_fn *tab);
void lt_cpu_register_cumprod(lt_kernel_fn *tab);
void lt_cpu_register_bitcast(lt_kernel_fn *tab);
void lt_cpu_register_affine_grid(lt_kernel_fn *tab);
void lt_cpu_register_causal_conv(lt_kernel_fn *tab);
void lt_cpu_register_linear_attention(lt_kernel_fn *tab);
void lt_cpu_register_string_ops(lt_kernel_fn *tab);
void lt_cpu_register_deform_conv(lt_kernel_fn *tab);
void lt_cpu_register_flex_attention(lt_kernel_fn *tab);
void lt_cpu_register_ml_ops(lt_kernel_fn *tab);
void lt_cpu_register_image_decoder(lt_kernel_fn *tab);
void lt_cpu_register_fused_elementwise(lt_kernel_fn *tab);

static void fill(void)
{
    lt_cpu_register_elementwise(lt_cpu_kernels);
    lt_cpu_register_reduce(lt_cpu_kernels);
    lt_cpu_register_nn(lt_cpu_kernels);
    lt_cpu_register_tensor(lt_cpu_kernels);
    lt_cpu_register_linalg(lt_cpu_kernels);
    lt_cpu_register_rnn(lt_cpu_kernels);
    lt_cpu_register_control(lt_cpu_kernels);
    lt_cpu_register_norm(lt_cpu_kernels);
    lt_cpu_register_index(lt_cpu_kernels);
    lt_cpu_register_image(lt_cpu_kernels);
    lt_cpu_register_misc(lt_cpu_kernels);
    lt_cpu_register_grad_nn(lt_cpu_kernels);
    lt_cpu_register_grad_misc(lt_cpu_kernels);
    lt_cpu_register_grad_rnn(lt_cpu_kernels);
    lt_cpu_register_grad_sampling(lt_cpu_kernels);
    lt_cpu_register_attention(lt_cpu_kernels);
    lt_cpu_register_cumprod(lt_cpu_kernels);
    lt_cpu_register_bitcast(lt_cpu_kernels);
    lt_cpu_register_affine_grid(lt_cpu_kernels);
    lt_cpu_register_causal_conv(lt_cpu_kernels);
    lt_cpu_register_linear_attention(lt_cpu_kernels);
    lt_cpu_register_string_ops(lt_cpu_kernels);
    lt_cpu_register_deform_conv(lt_cpu_kernels);
    lt_cpu_register_flex_attention(lt_cpu_kernels);
    lt_cpu_register_ml_ops(lt_cpu_kernels);
    lt_cpu_register_image_decoder(lt_cpu_kernels);
    lt_cpu_register_fused_elementwise(lt_cpu_kernels);
}

void lt_cpu_kernels_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill);
}
