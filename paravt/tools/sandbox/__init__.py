"""The python tool's sandbox: the isolated process runtime and its child runner."""
