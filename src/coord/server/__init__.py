"""The daemon's HTTP face (Starlette + uvicorn), imported only by `coord serve`."""
