"""`coord init` and `coord uninstall`: wiring coord into the agent clients' configs."""
