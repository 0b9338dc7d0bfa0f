package certificates

// CSRTable is the table its tests hold to kube's cells.
var CSRTable = csrTable
