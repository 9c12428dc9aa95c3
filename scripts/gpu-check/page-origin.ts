/**
 * The origin of the check's page: a name under .localhost, which no resolver sends anywhere. Its
 * paths are the machine's own files (`/tmp/x` is `${PAGE_ORIGIN}/tmp/x`), answered by the page's
 * `fetch` and its module hooks alone. It is not a file: URL because a file: URL's origin is
 * "null", which onnxruntime-web cannot resolve its own files against.
 */
export const PAGE_ORIGIN = 'http://gpu-check.localhost';
