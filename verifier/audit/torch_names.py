"""Names of PyTorch's compute functions, tensor methods and layers, listed from torch 2.13's public callables:
what the static rules call PyTorch compute (TRI302, explained and left to the run to decide) rather than a name
not known to be allowed (TRI317). Left out of the compute lists: what only allocates, views or reads metadata
(the rules allow it), what seeds, saves, loads, compiles or sets global state (refused by name), and the
backend-specific and private entry points. Nothing here is imported: the audit runs without torch.
"""

from __future__ import annotations

TORCH = frozenset(
    """
    abs abs_ absolute acos acos_ acosh acosh_ adaptive_avg_pool1d adaptive_max_pool1d add addbmm addcdiv
    addcmul addmm addmv addmv_ addr adjoint affine_grid_generator all allclose alpha_dropout alpha_dropout_
    amax amin aminmax angle any arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2
    arctan_ arctanh arctanh_ argmax argmin argsort argwhere asarray asin asin_ asinh asinh_ atan atan2 atan_
    atanh atanh_ avg_pool1d baddbmm bartlett_window batch_norm batch_norm_backward_elemt
    batch_norm_backward_reduce batch_norm_elemt batch_norm_gather_stats batch_norm_gather_stats_with_counts
    batch_norm_stats batch_norm_update_stats bilinear binary_cross_entropy_with_logits bincount binomial
    bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor blackman_window
    block_diag bmm broadcast_tensors bucketize cartesian_prod cat cdist ceil ceil_ celu celu_ chain_matmul
    channel_shuffle cholesky cholesky_inverse cholesky_solve choose_qparams_optimized clamp clamp_ clamp_max
    clamp_max_ clamp_min clamp_min_ clip clip_ column_stack combinations compiled_with_cxx11_abi complex
    concat concatenate conj_physical conj_physical_ constant_pad_nd conv1d conv2d conv3d conv_tbc
    conv_transpose1d conv_transpose2d conv_transpose3d convolution copysign corrcoef cos cos_ cosh cosh_
    cosine_embedding_loss cosine_similarity count_nonzero cov cross ctc_loss cummax cummin cumprod cumsum
    cumulative_trapezoid deg2rad deg2rad_ det detach_ diag diag_embed diagflat diagonal diagonal_scatter diff
    digamma dist div divide dot dropout dropout_ dsmm dstack eig einsum embedding embedding_bag
    embedding_renorm_ eq equal erf erf_ erfc erfc_ erfinv exp exp2 exp2_ exp_ expm1 expm1_
    feature_alpha_dropout feature_alpha_dropout_ feature_dropout feature_dropout_ fill fix fix_ flip fliplr
    flipud float_power floor floor_ floor_divide fmax fmin fmod frac frac_ frexp frobenius_norm
    fused_moving_avg_obs_fake_quant gather gcd gcd_ ge geqrf ger gradient greater greater_equal grid_sampler
    grid_sampler_2d grid_sampler_3d group_norm gru gru_cell gt hamming_window hann_window hardshrink heaviside
    hinge_embedding_loss histc histogram histogramdd hsmm hspmm hstack hypot i0 i0_ igamma igammac imag
    index_add index_fill index_put index_put_ index_reduce index_select inner instance_norm inverse isclose
    isfinite isin isinf isnan isneginf isposinf isreal istft kaiser_window kl_div kron kthvalue layer_norm lcm
    lcm_ ldexp ldexp_ le lerp less less_equal lgamma lobpcg log log10 log10_ log1p log1p_ log2 log2_ log_
    log_softmax logaddexp logaddexp2 logcumsumexp logdet logical_and logical_not logical_or logical_xor logit
    logit_ logsumexp lstm lstm_cell lstsq lt lu lu_solve lu_unpack margin_ranking_loss masked_fill
    masked_scatter masked_select matmul matrix_exp matrix_power matrix_rank max max_pool1d
    max_pool1d_with_indices max_pool2d max_pool3d maximum mean median meshgrid min minimum mm mode msort mul
    multiply mv mvlgamma nan_to_num nan_to_num_ nanmean nanmedian nanquantile nansum ne neg neg_ negative
    negative_ nextafter nonzero nonzero_static norm norm_except_dim not_equal nuclear_norm orgqr ormqr outer
    pairwise_distance pca_lowrank pdist pinverse pixel_shuffle pixel_unshuffle poisson_nll_loss polar
    polygamma positive pow prelu prod put qr quantile rad2deg rad2deg_ ravel real reciprocal reciprocal_ relu
    relu_ remainder renorm repeat_interleave rms_norm rnn_relu rnn_relu_cell rnn_tanh rnn_tanh_cell roll rot90
    round round_ row_stack rrelu rrelu_ rsqrt rsqrt_ rsub scatter scatter_add scatter_reduce searchsorted
    segment_reduce select_scatter selu selu_ sgn sigmoid sigmoid_ sign signbit sin sin_ sinc sinc_ sinh sinh_
    slogdet smm softmax solve sort split_with_sizes spmm sqrt sqrt_ square square_ sspaddmm stack std std_mean
    stft sub subtract sum svd svd_lowrank symeig take take_along_dim tan tan_ tanh tanh_ tensordot
    thread_safe_generator threshold threshold_ tile topk trace trapezoid trapz triangular_solve tril
    tril_indices triplet_margin_loss triu triu_indices true_divide trunc trunc_ unique unique_consecutive
    unsafe_chunk unsafe_split unsafe_split_with_sizes vander var var_mean vdot view_as_complex view_as_real
    vstack where xlogy xlogy_
    """.split()
)  # torch.X

FUNCTIONAL = frozenset(
    """
    Optional adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d
    adaptive_max_pool1d_with_indices adaptive_max_pool2d adaptive_max_pool2d_with_indices adaptive_max_pool3d
    adaptive_max_pool3d_with_indices affine_grid alpha_dropout assert_int_or_pair avg_pool1d avg_pool2d
    avg_pool3d batch_norm bilinear binary_cross_entropy binary_cross_entropy_with_logits boolean_dispatch celu
    celu_ channel_shuffle conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d
    cosine_embedding_loss cosine_similarity cross_entropy ctc_loss dropout dropout1d dropout2d dropout3d elu
    elu_ embedding embedding_bag feature_alpha_dropout fold fractional_max_pool2d
    fractional_max_pool2d_with_indices fractional_max_pool3d fractional_max_pool3d_with_indices
    gaussian_nll_loss gelu glu grid_sample group_norm grouped_mm gumbel_softmax handle_torch_function
    hardshrink hardsigmoid hardswish hardtanh hardtanh_ has_torch_function has_torch_function_unary
    has_torch_function_variadic hinge_embedding_loss huber_loss instance_norm interpolate kl_div l1_loss
    layer_norm leaky_relu leaky_relu_ linear linear_cross_entropy local_response_norm log_softmax logsigmoid
    lp_pool1d lp_pool2d lp_pool3d margin_ranking_loss max_pool1d max_pool1d_with_indices max_pool2d
    max_pool2d_with_indices max_pool3d max_pool3d_with_indices max_unpool1d max_unpool2d max_unpool3d mish
    mse_loss multi_head_attention_forward multi_margin_loss multilabel_margin_loss multilabel_soft_margin_loss
    nll_loss normalize one_hot pad pairwise_distance pdist pixel_shuffle pixel_unshuffle poisson_nll_loss
    prelu relu relu6 relu_ rms_norm rrelu rrelu_ scaled_dot_product_attention scaled_grouped_mm scaled_mm selu
    selu_ sigmoid silu smooth_l1_loss soft_margin_loss softmax softmin softplus softshrink softsign tanh
    tanhshrink threshold threshold_ triplet_margin_loss triplet_margin_with_distance_loss upsample
    upsample_bilinear upsample_nearest
    """.split()
)  # torch.nn.functional.X

SPECIAL = frozenset(
    """
    airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 chebyshev_polynomial_t chebyshev_polynomial_u
    chebyshev_polynomial_v chebyshev_polynomial_w digamma entr erf erfc erfcx erfinv exp2 expit expm1 gammainc
    gammaincc gammaln hermite_polynomial_h hermite_polynomial_he i0 i0e i1 i1e laguerre_polynomial_l
    legendre_polynomial_p log1p log_ndtr log_softmax logit logsumexp modified_bessel_i0 modified_bessel_i1
    modified_bessel_k0 modified_bessel_k1 multigammaln ndtr ndtri polygamma psi round
    scaled_modified_bessel_k0 scaled_modified_bessel_k1 shifted_chebyshev_polynomial_t
    shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w sinc softmax
    spherical_bessel_j0 xlog1py xlogy zeta
    """.split()
)  # torch.special.X

LINALG = frozenset(
    """
    cholesky cholesky_ex cross det diagonal eig eigh eigvals eigvalsh householder_product inv inv_ex
    ldl_factor ldl_factor_ex ldl_solve lstsq lu lu_factor lu_factor_ex lu_solve matmul matrix_exp matrix_norm
    matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex solve_triangular svd svdvals
    tensorinv tensorsolve vander vecdot vector_norm
    """.split()
)  # torch.linalg.X

FFT = frozenset(
    """
    fft fft2 fftfreq fftn fftshift hfft hfft2 hfftn ifft ifft2 ifftn ifftshift ihfft ihfft2 ihfftn irfft
    irfft2 irfftn rfft rfft2 rfftfreq rfftn
    """.split()
)  # torch.fft.X

TENSOR_METHODS = frozenset(
    """
    abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_ addcdiv addcdiv_ addcmul
    addcmul_ addmm addmm_ addmv addmv_ addr addr_ adjoint all allclose amax amin aminmax angle any arccos
    arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2 arctan2_ arctan_ arctanh arctanh_
    argmax argmin argsort argwhere asin asin_ asinh asinh_ atan atan2 atan2_ atan_ atanh atanh_ baddbmm
    baddbmm_ bernoulli_ bincount bitwise_and bitwise_and_ bitwise_left_shift bitwise_left_shift_ bitwise_not
    bitwise_not_ bitwise_or bitwise_or_ bitwise_right_shift bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm
    cauchy_ ceil ceil_ cholesky cholesky_inverse cholesky_solve clamp clamp_ clamp_max clamp_max_ clamp_min
    clamp_min_ clip clip_ conj_physical conj_physical_ copysign copysign_ corrcoef cos cos_ cosh cosh_
    count_nonzero cov cross cummax cummin cumprod cumprod_ cumsum cumsum_ deg2rad deg2rad_ det detach_ diag
    diag_embed diagflat diagonal diagonal_scatter diff digamma digamma_ dist div div_ divide divide_ dot eig
    eq eq_ equal erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expm1 expm1_ exponential_
    fill_diagonal_ fix fix_ flip fliplr flipud float_power float_power_ floor floor_ floor_divide
    floor_divide_ fmax fmin fmod fmod_ frac frac_ frexp gather gcd gcd_ ge ge_ geometric_ geqrf ger greater
    greater_ greater_equal greater_equal_ gt gt_ hardshrink heaviside heaviside_ histc histogram hypot hypot_
    i0 i0_ igamma igamma_ igammac igammac_ index index_add index_add_ index_copy_ index_fill index_fill_
    index_put index_put_ index_reduce index_reduce_ index_select inner inverse isclose isfinite isinf isnan
    isneginf isposinf isreal istft kron kthvalue lcm lcm_ ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal
    less_equal_ lgamma lgamma_ log log10 log10_ log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp
    logaddexp2 logcumsumexp logdet logical_and logical_and_ logical_not logical_not_ logical_or logical_or_
    logical_xor logical_xor_ logit logit_ logsumexp lstsq lt lt_ lu lu_solve masked_fill masked_fill_
    masked_scatter masked_scatter_ masked_select matmul matrix_exp matrix_power max maximum mean median min
    minimum mm mode msort mul mul_ multiply multiply_ mv mvlgamma mvlgamma_ nan_to_num nan_to_num_ nanmean
    nanmedian nanquantile nansum ne ne_ neg neg_ negative negative_ nextafter nextafter_ nonzero
    nonzero_static norm normal_ not_equal not_equal_ orgqr ormqr outer pinverse polygamma polygamma_ positive
    pow pow_ prelu prod put put_ qr quantile rad2deg rad2deg_ ravel reciprocal reciprocal_ relu relu_
    remainder remainder_ renorm renorm_ repeat repeat_interleave roll rot90 round round_ rsqrt rsqrt_ scatter
    scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select_scatter sgn sgn_ sigmoid sigmoid_
    sign sign_ signbit sin sin_ sinc sinc_ sinh sinh_ slogdet smm softmax solve sort split_with_sizes sqrt
    sqrt_ square square_ squeeze_ sspaddmm std stft sub sub_ subtract subtract_ sum sum_to_size svd swapaxes_
    swapdims_ symeig t_ take take_along_dim tan tan_ tanh tanh_ tile topk trace transpose_ triangular_solve
    tril tril_ triu triu_ true_divide true_divide_ trunc trunc_ uniform_ unique unique_consecutive
    unsafe_chunk unsafe_split unsafe_split_with_sizes unsqueeze_ var vdot where xlogy xlogy_
    """.split()
)  # Tensor.X(...)

LAYERS = frozenset(
    """
    AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveLogSoftmaxWithLoss AdaptiveMaxPool1d
    AdaptiveMaxPool2d AdaptiveMaxPool3d AlphaDropout AvgPool1d AvgPool2d AvgPool3d BCELoss BCEWithLogitsLoss
    BatchNorm1d BatchNorm2d BatchNorm3d Bilinear CELU CTCLoss ChannelShuffle CircularPad1d CircularPad2d
    CircularPad3d ConstantPad1d ConstantPad2d ConstantPad3d Container Conv1d Conv2d Conv3d ConvTranspose1d
    ConvTranspose2d ConvTranspose3d CosineEmbeddingLoss CosineSimilarity CrossEntropyLoss CrossMapLRN2d
    DataParallel Dropout Dropout1d Dropout2d Dropout3d ELU Embedding EmbeddingBag FeatureAlphaDropout Flatten
    Fold FractionalMaxPool2d FractionalMaxPool3d GELU GLU GRU GRUCell GaussianNLLLoss GroupNorm Hardshrink
    Hardsigmoid Hardswish Hardtanh HingeEmbeddingLoss HuberLoss Identity InstanceNorm1d InstanceNorm2d
    InstanceNorm3d KLDivLoss L1Loss LPPool1d LPPool2d LPPool3d LSTM LSTMCell LayerNorm LazyBatchNorm1d
    LazyBatchNorm2d LazyBatchNorm3d LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d
    LazyConvTranspose3d LazyInstanceNorm1d LazyInstanceNorm2d LazyInstanceNorm3d LazyLinear LeakyReLU Linear
    LinearCrossEntropyLoss LocalResponseNorm LogSigmoid LogSoftmax MSELoss MarginRankingLoss MaxPool1d
    MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d Mish Module ModuleDict ModuleList
    MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss MultiheadAttention NLLLoss NLLLoss2d PReLU
    PairwiseDistance ParameterDict ParameterList PixelShuffle PixelUnshuffle PoissonNLLLoss RMSNorm RNN
    RNNBase RNNCell RNNCellBase RReLU ReLU ReLU6 ReflectionPad1d ReflectionPad2d ReflectionPad3d
    ReplicationPad1d ReplicationPad2d ReplicationPad3d SELU Sequential SiLU Sigmoid SmoothL1Loss
    SoftMarginLoss Softmax Softmax2d Softmin Softplus Softshrink Softsign SyncBatchNorm Tanh Tanhshrink
    Threshold Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder
    TransformerEncoderLayer TripletMarginLoss TripletMarginWithDistanceLoss Unflatten Unfold Upsample
    UpsamplingBilinear2d UpsamplingNearest2d ZeroPad1d ZeroPad2d ZeroPad3d
    """.split()
)  # torch.nn.X: modules (constructed in __init__, computing when called)
