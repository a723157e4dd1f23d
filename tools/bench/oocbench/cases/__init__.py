# The registry of bench cases: one module per case, named on the command line as below. The
# order is the order of `run all` and of the help text.
from .atax import case_atax
from .budget import case_budget
from .dask_cluster import case_dask
from .fft import case_fft
from .fft_auto import case_fft_auto
from .labels import case_labels, case_labels_ooc
from .morphology import case_morphology
from .multi_gpu import case_multi_gpu
from .nodata import case_nodata
from .ops import case_ops
from .peers import case_peers
from .pipeline import case_pipeline
from .pyramid import case_pyramid
from .stages import case_stages
from .startup import case_startup
from .stream import case_stream
from .tiff import case_tiff
from .volumes import case_volumes
from .write import case_write

REGISTRY = {"peers": case_peers, "write": case_write, "startup": case_startup, "stream": case_stream,
            "stages": case_stages, "tiff": case_tiff, "ops": case_ops, "atax": case_atax,
            "multi-gpu": case_multi_gpu, "pipeline": case_pipeline, "morphology": case_morphology,
            "pyramid": case_pyramid, "fft": case_fft,
            "fft-auto": case_fft_auto, "budget": case_budget, "volumes": case_volumes,
            "dask": case_dask, "labels": case_labels, "labels-ooc": case_labels_ooc,
            "nodata": case_nodata}
CASES = list(REGISTRY)
