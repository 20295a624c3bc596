// What an attempt's prompt carries besides its text: the images OpenClaw attached (`params.images`)
// plus the local image files the prompt names (`detectAndLoadAgentHarnessPromptImages`, the same
// detection and limits OpenClaw's embedded runner uses), bounded before they go on the wire.

/** The most images one attempt sends (the bridge refuses more). */
export const MAX_IMAGES = 16;
/** The most base64 characters all images of one attempt send (the bridge bounds bytes too). */
export const MAX_IMAGE_CHARS = 44 * 1024 * 1024;

/**
 * The attempt's images as `{data, mimeType}`: `params.images`, then those the prompt references
 * when the SDK's loader is there and the model takes images. A loader that fails leaves the
 * attached images as they are (the failure is logged, the attempt goes on with its text).
 */
export async function promptImages(params, loadPromptImages, logger) {
  const attached = wireImages(params.images);
  if (typeof loadPromptImages !== "function" || typeof params.prompt !== "string") return bounded(attached);
  const model = { input: Array.isArray(params.model?.input) ? params.model.input : [] };
  if (!model.input.includes("image")) return bounded(attached);
  try {
    const loaded = await loadPromptImages({
      prompt: params.prompt,
      workspaceDir: params.workspaceDir ?? params.cwd ?? "",
      model,
      existingImages: Array.isArray(params.images) ? params.images : [],
      // The attachment order: which images came inline and which the prompt's media facts carry,
      // so the loaded images keep the order the user attached them in.
      ...(Array.isArray(params.imageOrder) ? { imageOrder: params.imageOrder } : {}),
      ...(Array.isArray(params.media) ? { media: params.media } : {}),
      // Only files inside the workspace: a prompt must not turn any readable file into model input.
      workspaceOnly: true,
      config: params.config,
    });
    const found = wireImages(loaded?.images);
    return bounded(found.length > 0 ? found : attached);
  } catch (error) {
    logger?.warn?.(`clawbridge: the prompt's images could not be loaded: ${error?.message ?? error}`);
    return bounded(attached);
  }
}

function wireImages(images) {
  return Array.isArray(images)
    ? images
        .filter((i) => typeof i?.data === "string" && typeof i?.mimeType === "string")
        .map((i) => ({ data: i.data, mimeType: i.mimeType }))
    : [];
}

function bounded(images) {
  const out = [];
  let chars = 0;
  for (const image of images.slice(0, MAX_IMAGES)) {
    chars += image.data.length;
    if (chars > MAX_IMAGE_CHARS) break;
    out.push(image);
  }
  return out;
}
