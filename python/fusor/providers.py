"""Execution providers, as ONNX Runtime names them. fusor runs on the CPU only: other providers
are ignored with ONNX Runtime's own warning for a provider that is not available."""
import warnings

CPU = "CPUExecutionProvider"


def get_available_providers() -> list:
    return [CPU]


def get_all_providers() -> list:
    return [CPU]


def get_device() -> str:
    return "CPU"


def resolve(providers, provider_options) -> tuple:
    """(providers, provider_options) as InferenceSession takes them -> ([CPU], [CPU's options]).

    providers: None, one name, or a list of names or (name, options) pairs; provider_options: None
    or a list of dicts, one per provider."""
    if isinstance(providers, str):  # ONNX Runtime reads its characters, then falls back to the CPU
        providers = [providers]
    names, options = [], []
    for i, p in enumerate(providers or []):
        name, opts = (p[0], dict(p[1])) if isinstance(p, (tuple, list)) else (p, {})
        if provider_options is not None and i < len(provider_options):
            opts.update(provider_options[i])
        names.append(name)
        options.append(opts)
    cpu_options = {}
    for name, opts in zip(names, options):
        if name == CPU:
            cpu_options = {str(k): str(v) for k, v in opts.items()}
        else:
            warnings.warn(f"Specified provider '{name}' is not in available provider names."
                          f"Available providers: '{CPU}'", stacklevel=3)
    return [CPU], [cpu_options]
