package apiserver

// SetServedResources gives the test servers of this package's tests the
// resources rs returns besides the built-in ones.
func SetServedResources(rs func() []*Resource) { servedResources = rs }
