"""`ppt env`: versions, device, cache directory and which offline models are installed."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import handle_errors

_PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "tiktoken",
    "numpy",
    "safetensors",
    "gguf",
    "accelerate",
    "pyarrow",
    "spacy",
)


def collect() -> dict:
    """Everything `ppt env` reports, as plain data."""
    import importlib.metadata
    import os
    import platform
    import sys

    from ppt import __version__
    from ppt.cache import cache_dir
    from ppt.cli.config import LOADED
    from ppt.models.device import describe_devices
    from ppt.models.install import status_rows
    from ppt.models.tiktoken_offline import tiktoken_cache_dir

    versions: dict[str, str | None] = {"ppt": __version__, "python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    env = {
        k: os.environ.get(k)
        for k in ("PPT_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TIKTOKEN_CACHE_DIR", "CUDA_VISIBLE_DEVICES")
    }
    return {
        "versions": versions,
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "device": describe_devices(),
        "cache_dir": str(cache_dir()),
        "tiktoken_cache_dir": str(tiktoken_cache_dir()),
        "environment": env,
        "models": status_rows(),
        "config": dict(LOADED) or None,
    }


def env(
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout instead of tables.")] = False,
) -> None:
    """Print ppt/python/torch/transformers/tiktoken versions, the device (CUDA and GPU names), the cache
    directory, and which offline models are installed (with the exact command for missing ones).

    Example: ppt env        ppt env --json | jq .device
    """
    with handle_errors():
        info = collect()
        if json_out:
            import orjson

            typer.echo(orjson.dumps(info).decode())
            return
        from rich.console import Console
        from rich.table import Table

        console = Console()
        vt = Table(title="ppt environment", show_header=False)
        vt.add_column("what", style="bold")
        vt.add_column("value", overflow="fold")
        for k, v in info["versions"].items():
            vt.add_row(k, v or "[dim]not installed[/]")
        dev = info["device"]
        if dev["cuda_available"]:
            gpus = "; ".join(f"cuda:{d['index']} {d['name']} ({d['memory_gib']} GiB)" for d in dev["devices"])
            vt.add_row("device", f"cuda (CUDA {dev['cuda_version']}): {gpus}")
        else:
            vt.add_row("device", "cpu (no CUDA device visible)")
        vt.add_row(
            "cache dir",
            info["cache_dir"] + ("" if info["environment"]["PPT_CACHE"] else "  [dim](set PPT_CACHE to move it)[/]"),
        )
        vt.add_row("tiktoken cache", info["tiktoken_cache_dir"])
        for k, v in info["environment"].items():
            if v is not None and k != "PPT_CACHE":
                vt.add_row(k, v)
        cfg = info["config"]
        vt.add_row(
            "config",
            f"{cfg['path']}: " + ", ".join(f"[{t}]" for t in cfg["tables"])
            if cfg
            else "[dim]none (ppt.toml, --config FILE or PPT_CONFIG)[/]",
        )
        console.print(vt)

        mt = Table(title="offline models")
        for col in ("alias", "kind", "status", "install with"):
            mt.add_column(col, overflow="fold")
        for r in info["models"]:
            if r["status"] == "installed":
                status = (
                    "[green]installed[/]"
                    if not r["missing_modules"]
                    else f"[yellow]needs {', '.join(r['missing_modules'])}[/]"
                )
                how = "" if not r["missing_modules"] else "python -m pip install " + " ".join(r["missing_modules"])
            else:
                status, how = "[red]missing[/]", f"{r['install']}  ({r['pip']})"
            mt.add_row(r["alias"], r["kind"], status, how)
        console.print(mt)


def register(app: typer.Typer) -> None:
    app.command("env", short_help="Versions, device, cache dir and installed offline models.")(env)
