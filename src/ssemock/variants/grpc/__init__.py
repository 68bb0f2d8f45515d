"""What a replay does to a gRPC call: its faults (status, drop, stall) and its pacing under timing= and deadlines."""
