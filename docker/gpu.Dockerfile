# GPU image of one Paddle build: Paddle's official GPU image (CUDA, cuDNN and, up to 3.0, TensorRT
# inside), optionally with other Paddle packages installed offline from the build context.
#
# BASE_IMAGE: the matrix's paddle."<version>".gpu_base, e.g.
#   paddlepaddle/paddle:3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6
#   paddlepaddle/paddle:2.6.2-gpu-cuda12.0-cudnn8.9-trt8.6
# From 3.1 the official tags carry no TensorRT: TensorRT sessions on those images skip with
# "this Paddle build has no TensorRT" until TensorRT is added to the image.
#
# Not built or run on the project's machines (no GPU, no registry): written against the
# official images' documented layout.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PADDLE_PACKAGES=""
COPY wheels/ /wheels/
RUN if [ -n "${PADDLE_PACKAGES}" ]; then \
      python3 -m pip install --no-cache-dir --no-index --find-links /wheels ${PADDLE_PACKAGES}; \
    fi \
 && python3 -c "import paddle; print(paddle.__version__, paddle.version.cuda(), paddle.version.cudnn())" \
 && rm -rf /wheels
ENV PYTHONDONTWRITEBYTECODE=1 \
    GLOG_minloglevel=1
