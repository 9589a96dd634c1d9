// placeholder, replaced by the cross-process worker
export {};
