"""The daemon process: lock, socket, connections, file watcher, lifecycle."""
