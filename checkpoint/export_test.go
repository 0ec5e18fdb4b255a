package checkpoint

// DirStorePath lets the external tests (which run the service, and so
// cannot be in this package: the service imports it) damage a stored file.
var DirStorePath = DirStore.path

// Allocated is allocated, for the external tests.
var Allocated = allocated
