/** Browsers have no package folder: the bundled models are served by the site (BUNDLED_MODEL_URL_PATH). */
import { UnsupportedError } from '../../errors.js';

function noFolder(name: string, urlPath: string): Promise<string> {
  return Promise.reject(
    new UnsupportedError(
      `The bundled model's folder is a Node path. In a browser, serve node_modules/webgrpo/public/models/${name}/ from your site ` +
        `(at ${urlPath} when public/models/ is served at /models/) and load it by that URL path.`,
    ),
  );
}

/** Node only: in a browser it rejects with an `UnsupportedError` that says where the model is served. */
export function bundledModelPath(): Promise<string> {
  return noFolder('webgrpo-tiny', '/models/webgrpo-tiny/');
}

/** Node only, as `bundledModelPath`. */
export function skillModelPath(): Promise<string> {
  return noFolder('webgrpo-skill', '/models/webgrpo-skill/');
}
