"""ssemock: record and replay streaming HTTP responses with their chunk boundaries and timing."""
