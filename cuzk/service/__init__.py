"""The proving service: `cuzk daemon` (gRPC cuzk.v1 with an HTTP status and metrics endpoint), the
durable job journal that makes every accepted job survive a crash, the supervisor that restarts the
daemon and records why it died, and the client. Import the submodules directly
(`from cuzk.service.journal import Journal`); this package imports none of them itself."""
