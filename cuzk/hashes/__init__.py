"""Native (non-circuit) hashes used by sealing, trees and the SDR graph."""
