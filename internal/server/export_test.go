package server

// StoreTimeout is storeTimeout, for the tests outside the package.
const StoreTimeout = storeTimeout
