package httpapi

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document of every route, served at /api/v1/openapi.json
// and checked against the router by TestOpenAPICoversRouter.
//
//go:embed openapi.json
var OpenAPI []byte
